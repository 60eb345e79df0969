"""CLIP models behind one interface: find the weights offline, load them once, embed images and
captions, and keep image embeddings by image content hash and model.

Backends
--------
``openai``
    An OpenAI-format checkpoint file (CLIP's ``ViT-B-32.pt``, PAC-S's ``clip_ViT-B-32.pth``) run
    by capeval's own torch module (``_clip_openai``) and tokenized by capeval's CLIP BPE
    (``_clip_bpe``, from the released merges file). Needs torch only.
``open_clip``
    The same file loaded by ``open_clip`` (``build_model_from_openai_state_dict``) with its
    tokenizer. open_clip imports torchvision, so this backend works where torchvision imports.
``transformers``
    A ``CLIPModel`` directory (or a Hugging Face id already in the local cache) with its own
    tokenizer, loaded with ``local_files_only``.

Every backend takes the same pixels (``_clip_image``, CLIP's preprocessing). Nothing is
downloaded: a missing model is a :class:`ResourceNotFound` that says where to put it.
"""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..digests import sha256_file
from ..guards import read_image_bytes
from ..errors import InputError, ResourceNotFound
from ._clip_cache import load_shards
from ._clip_image import PREPROCESS_ID, decode, preprocess_image

BACKENDS = ("auto", "openai", "open_clip", "transformers")
#: Bumped when embeddings computed by this module would change for the same model and image,
#: so embeddings cached on disk before the change are not reused.
EMBEDDING_REVISION = 2  # 2: fixed-shape batches on single-threaded workers (torch_runner)


@dataclass
class ClipEncoder:
    """A loaded model: what signatures name, and its embedding functions.

    ``embed_pixels`` embeds a batch of preprocessed images; ``text_ids`` gives each text's
    token row exactly as the text tower takes it, and ``embed_ids`` embeds a batch of rows of
    one length. Callers go through :func:`image_embeddings` and :func:`text_embeddings`, which
    run every batch in the torch runner's fixed shape (``capeval.resources.torch_runner``).
    """

    backend: str
    model_sha256: str
    n_px: int
    context_length: int
    tokenizer: str
    dtype: str
    device: str
    embed_pixels: Callable[[np.ndarray], np.ndarray]
    text_ids: Callable[[list[str]], list[list[int]]]
    embed_ids: Callable[[list[list[int]]], np.ndarray]
    arch: str = ""
    #: Whole rows, not truncated, unpadded (``_clip_long``); ``pad_to``: the tower takes rows padded so.
    full_ids: Callable[[list[str]], list[list[int]]] | None = None
    pad_to: int | None = None

    @property
    def key(self) -> str:
        """What an embedding depends on besides its input."""
        return (f"{self.backend}|{self.model_sha256}|{self.dtype}|{self.device}|{PREPROCESS_ID}|"
                f"{self.n_px}|{self.tokenizer}|r{EMBEDDING_REVISION}")


_digests: dict[tuple, str] = {}


def model_sha256(path: Path) -> str:
    """SHA-256 of a checkpoint file, or of a model directory's weight files (names and bytes)."""
    files = [path] if path.is_file() else sorted(
        p for p in path.iterdir() if p.is_file() and p.suffix in {".safetensors", ".bin", ".pt", ".pth"}
    )
    if not files:
        raise ResourceNotFound(f"no weight files (*.safetensors, *.bin) in model directory {path}")
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _digests:
        if path.is_file():
            _digests[key] = sha256_file(path)
        else:
            h = hashlib.sha256()
            for p in files:
                h.update(p.name.encode() + b"\0" + sha256_file(p).encode())
            _digests[key] = h.hexdigest()
    return _digests[key]


def locate(model: str | Path | None, default_resource: str, backend: str) -> tuple[str, Path]:
    """(backend, local path) of ``model``: a checkpoint file, a model directory, a Hugging Face id
    in the local cache, or (``None``) the family's registered default."""
    from ..resources.resolver import resolve

    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if model is None:
        path = resolve(default_resource)
    else:
        path = Path(model).expanduser()
        if not path.exists():
            name = str(model)
            if name.startswith(("/", ".", "~")) or name.count("/") != 1 or "\\" in name:
                raise ResourceNotFound(
                    f"CLIP model not found: {path}. Pass an OpenAI-format checkpoint file (ViT-B-32.pt, "
                    "PAC-S's clip_ViT-B-32.pth) or a transformers CLIPModel directory"
                )
            path = _hub_snapshot(name)
    if backend == "auto":
        backend = "transformers" if path.is_dir() else "openai"
    if backend == "transformers" and not path.is_dir():
        raise InputError(f"backend 'transformers' needs a CLIPModel directory, got the file {path}")
    if backend in ("openai", "open_clip") and not path.is_file():
        raise InputError(f"backend {backend!r} needs an OpenAI-format checkpoint file, got the directory {path}")
    return backend, path


def _hub_snapshot(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception as exc:  # noqa: BLE001 - hub errors vary by version; all mean "not here"
        raise ResourceNotFound(
            f"CLIP model {repo_id!r} is not in the local Hugging Face cache ({type(exc).__name__}); capeval "
            "downloads nothing. Fetch it once where there is network (huggingface-cli download "
            f"{repo_id}) or pass a local CLIPModel directory"
        ) from None


_loaded: dict[tuple, ClipEncoder] = {}
_load_lock = threading.Lock()


def load(model: str | Path | None, *, default_resource: str, backend: str = "auto",
         tokenizer: str | Path | None = None, device: str = "cpu", fp16: bool = False,
         quick_gelu: bool = True) -> ClipEncoder:
    """The :class:`ClipEncoder` of ``model``, loaded once per process (one model kept)."""
    backend, path = locate(model, default_resource, backend)
    if fp16 and not str(device).startswith("cuda"):
        raise InputError("fp16 runs on a GPU only (device='cuda'); on CPU CLIP runs in float32")
    key = (backend, str(path.resolve()), str(tokenizer), device, fp16, quick_gelu)
    with _load_lock:
        hit = _loaded.get(key)
        if hit is not None:
            return hit
        from ..resources.encoders import fork_safe_torch

        fork_safe_torch()  # a fork pool after this process ran torch would otherwise hang
        if backend == "transformers":
            enc = _load_transformers(path, device, fp16)
        else:
            enc = _load_openai_format(path, backend, tokenizer, device, fp16, quick_gelu)
        _loaded.clear()  # models are hundreds of MB: keep the last one
        _loaded[key] = enc
        return enc


def _torch_device(device: str):
    import torch

    try:
        dev = torch.device(device)
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise InputError(f"device {device!r} is not usable: {exc}") from None
    return dev


def _load_openai_format(path: Path, backend: str, tokenizer, device: str, fp16: bool, quick_gelu: bool) -> ClipEncoder:
    import torch

    from ._clip_openai import build, read_state_dict

    dev = _torch_device(device)
    sd = read_state_dict(path)
    if backend == "open_clip":
        try:
            import open_clip
            from open_clip.model import build_model_from_openai_state_dict
        except Exception as exc:  # noqa: BLE001 - a broken torchvision raises RuntimeError, not ImportError
            raise ResourceNotFound(
                f"backend 'open_clip' cannot import open_clip here ({type(exc).__name__}: {exc}); "
                "pip install open_clip_torch with a torchvision built for this torch, or use backend='openai' "
                "(same checkpoint, no torchvision)"
            ) from None
        net = build_model_from_openai_state_dict(dict(sd), quick_gelu=quick_gelu, cast_dtype=torch.float32)
        # open_clip loads into half-precision weights; reload in float32 so a float32 checkpoint
        # (PAC-S's) keeps every bit.
        net = net.float()
        net.load_state_dict({k: v.float() for k, v in sd.items()})
        net = net.eval()
        if fp16:
            from open_clip.model import convert_weights_to_lp

            convert_weights_to_lp(net, dtype=torch.float16)
        ctx = int(net.context_length)
        n_px = int(net.visual.image_size[0] if isinstance(net.visual.image_size, (tuple, list)) else net.visual.image_size)
        tok_name = f"open_clip-{getattr(open_clip, '__version__', '?')}"

        def text_ids(texts: list[str]) -> list[list[int]]:
            # open_clip's text tower adds all context_length positional embeddings and its
            # causal mask has that size: every row is padded to it, as clip.tokenize pads.
            return open_clip.tokenize(texts, context_length=ctx).tolist()

        from open_clip.tokenizer import _tokenizer as oc_tok  # the tokenizer open_clip.tokenize uses
        ends = oc_tok.encoder["<start_of_text>"], oc_tok.encoder["<end_of_text>"]
        full_ids = lambda texts: [[ends[0], *oc_tok.encode(t), ends[1]] for t in texts]  # noqa: E731
    else:
        from ..resources.clip import clip_bpe_path
        from ._clip_bpe import ClipBPE

        net = build(sd, quick_gelu=quick_gelu)
        if fp16:
            net.half_weights()
        bpe_path = clip_bpe_path(tokenizer)
        bpe = ClipBPE(bpe_path)
        if bpe.vocab_size > net.token_embedding.num_embeddings:
            raise InputError(f"tokenizer {bpe_path} has {bpe.vocab_size} tokens, the model only "
                             f"{net.token_embedding.num_embeddings}")
        ctx = int(net.context_length)
        n_px = int(net.visual.input_resolution)
        tok_name = f"clip-bpe-{sha256_file(bpe_path)[:12]}"

        def text_ids(texts: list[str]) -> list[list[int]]:
            # No padding: each row ends at its end token (see encode_text; clip.tokenize pads
            # to 77 with zeros, which causal attention keeps from reaching the end token).
            return [list(r) for r in bpe.tokenize(texts, ctx)]

        full_ids = lambda texts: [[bpe.sot, *bpe.encode(t), bpe.eot] for t in texts]  # noqa: E731
    net = net.to(dev)
    in_dtype = torch.float16 if fp16 else torch.float32

    def embed_pixels(pixels: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(pixels).to(dev, in_dtype)
            return net.encode_image(x).cpu().numpy()  # float16 under fp16, as the scripts get it

    def embed_ids(rows: list[list[int]]) -> np.ndarray:
        with torch.inference_mode():
            return net.encode_text(torch.tensor(rows, dtype=torch.long).to(dev)).cpu().numpy()

    width = sd["visual.conv1.weight"].shape[0]
    patch = sd["visual.conv1.weight"].shape[-1]
    arch = f"vit-w{width}-p{patch}-{n_px}px" + ("" if quick_gelu else "-gelu")
    return ClipEncoder(backend, model_sha256(path), n_px, ctx, tok_name, "float16" if fp16 else "float32",
                       str(device), embed_pixels, text_ids, embed_ids, arch, full_ids,
                       ctx if backend == "open_clip" else None)


def _load_transformers(path: Path, device: str, fp16: bool) -> ClipEncoder:
    try:
        import torch
        from transformers import AutoTokenizer, CLIPModel
    except ImportError as exc:
        from ..extras import install_hint

        raise ResourceNotFound(f"backend 'transformers' needs torch and transformers ({exc}); "
                               f"{install_hint(['image'])}") from None
    dev = _torch_device(device)
    try:
        from ..resources.encoders import quiet_model_loading, tokenizer_lock

        with quiet_model_loading():
            net = CLIPModel.from_pretrained(str(path), local_files_only=True)
            tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ResourceNotFound(f"could not load a CLIPModel and its tokenizer from {path}: {exc}") from None
    net = net.eval().to(dev)
    if fp16:
        net = net.half()
    ctx = int(net.config.text_config.max_position_embeddings)
    n_px = int(net.config.vision_config.image_size)

    def features(out):
        # transformers 5 returns a model output whose pooler_output is the projected embedding.
        return out if isinstance(out, torch.Tensor) else out.pooler_output

    def embed_pixels(pixels: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(pixels).to(dev, net.dtype)
            return features(net.get_image_features(pixel_values=x)).cpu().numpy()

    def text_ids(texts: list[str]) -> list[list[int]]:
        # Truncation keeps the end token, as clip.tokenize; no padding (causal attention).
        with tokenizer_lock(tok):  # a Rust tokenizer shared by two threads fails ("Already borrowed")
            return [list(r) for r in tok(texts, truncation=True, max_length=ctx)["input_ids"]]

    def full_ids(texts: list[str]) -> list[list[int]]:
        with tokenizer_lock(tok):
            return [list(r) for r in tok(texts, truncation=False)["input_ids"]]

    def embed_ids(rows: list[list[int]]) -> np.ndarray:
        with torch.inference_mode():
            x = torch.tensor(rows, dtype=torch.long).to(dev)
            out = net.get_text_features(input_ids=x, attention_mask=torch.ones_like(x))
            return features(out).cpu().numpy()

    vc = net.config.vision_config
    arch = f"vit-w{vc.hidden_size}-p{vc.patch_size}-{n_px}px-{vc.hidden_act}"
    return ClipEncoder("transformers", model_sha256(path), n_px, ctx, f"hf-{type(tok).__name__}",
                       "float16" if fp16 else "float32", str(device), embed_pixels, text_ids, embed_ids, arch,
                       full_ids)


# ------------------------------------------------------------------------ image embeddings

_memory: dict[str, dict[str, np.ndarray]] = {}
_memory_lock = threading.Lock()


def _disk_dir(enc: ClipEncoder) -> Path:
    from ..paths import cache_root

    return cache_root() / "clip-image-embeddings" / hashlib.sha256(enc.key.encode()).hexdigest()[:24]


def _table(enc: ClipEncoder, disk: bool) -> dict[str, np.ndarray]:
    """Embeddings already known for this model: this process's, plus the disk shards."""
    with _memory_lock:
        table = _memory.get(enc.key)
        if table is None:
            table = _memory[enc.key] = {}
            if disk:
                folder = _disk_dir(enc)
                table.update(load_shards(folder))  # digest- and manifest-checked; a bad shard is dropped
        return table


def image_embeddings(enc: ClipEncoder, paths: list[str], *, batch_size: int, disk: bool = True,
                     on_batch: Callable[[int], None] | None = None) -> tuple[np.ndarray, dict]:
    """One embedding row per path. Each distinct image content is decoded and embedded once per
    process (and once per cache root when ``disk``); returns the rows and counts."""
    digests: list[str] = []
    todo: dict[str, tuple[str, bytes]] = {}
    table = _table(enc, disk)
    by_path: dict[str, str] = {}  # benchmarks repeat an image over its rows: read each path once
    for p in paths:
        d = by_path.get(p)
        if d is None:
            data = read_image_bytes(p)  # a regular file within the image door's size limit
            d = by_path[p] = hashlib.sha256(data).hexdigest()
            if d not in table and d not in todo:
                todo[d] = (p, data)
        digests.append(d)
    from ..resources.torch_runner import map_fixed

    new: dict[str, np.ndarray] = {}
    items = list(todo.items())
    for start in range(0, len(items), batch_size):  # batch_size bounds the images decoded at once
        chunk = items[start:start + batch_size]
        pixels = np.stack([preprocess_image(decode(data, p), enc.n_px) for _, (p, data) in chunk])
        # Every image in a batch of the runner's fixed shape: its embedding depends on it alone.
        def forward(idx: list[int], px: np.ndarray = pixels) -> np.ndarray:
            return enc.embed_pixels(px[idx])

        for (d, _), row in zip(chunk, map_fixed(forward, [0] * len(chunk), per_task=batch_size,
                                                 workers=_workers(enc))):
            new[d] = np.array(row, copy=True)
        if on_batch is not None:
            on_batch(len(chunk))
    if new:
        with _memory_lock:
            table.update(new)
        if disk:
            _write_shard(enc, new)
    emb = np.stack([table[d] for d in digests]) if digests else np.zeros((0, 0), np.float32)
    return emb, {"images": len(paths), "distinct": len(set(digests)), "embedded": len(new)}


def _write_shard(enc: ClipEncoder, new: dict[str, np.ndarray]) -> None:
    from ._clip_cache import write_shard

    write_shard(_disk_dir(enc), new)  # listed in the folder's manifest; a read-only root only costs time


def _workers(enc: ClipEncoder) -> int:
    from ..resources.torch_runner import default_workers

    return default_workers(enc.device)


def text_embeddings(enc: ClipEncoder, texts: list[str], *, batch_size: int) -> np.ndarray:
    """One embedding row per text, each distinct text embedded once, in batches of the torch
    runner's fixed shape (texts of one token length, no padding), so a text's embedding
    depends on it alone. ``batch_size``: texts a thread takes at a time (speed only)."""
    from ..resources.torch_runner import map_fixed

    distinct = list(dict.fromkeys(texts))
    ids = enc.text_ids(distinct) if distinct else []
    rows = map_fixed(lambda idx: enc.embed_ids([ids[i] for i in idx]), [len(r) for r in ids],
                     per_task=batch_size, workers=_workers(enc))
    out = dict(zip(distinct, rows))
    return np.stack([out[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)
