"""Polos: a regressor trained on human judgments of captions, over SimCSE and CLIP features.

Wada, Kaneda, Saito & Sugiura (2024), "Polos: Multimodal Metric Learning from Human Feedback for
Image Captioning", CVPR. The ``polos`` package (PyPI 0.1.3, keio-smilab24/Polos) scores with
``PolosEstimator`` loaded from a Lightning checkpoint; capeval runs the same network with plain
torch from the user's checkpoint (``_polos_model`` says what it computes). Nothing is shipped or
downloaded: the user brings the checkpoint (``reprod.ckpt`` with ``hparams.yaml`` beside it),
a local copy of the text encoder's config and tokenizer, and CLIP's BPE merges file.

A caption's score depends on that caption, its references and its image only (the package's
number at ``batch_size=1``; docs/POLOS.md), so it streams, shards and caches like every
per-row family.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..progress import report
from ..result import MetricScores
from . import _long_text
from .base import Metric, OutputInfo
from .registry import register

PROMPT = "A photo depicts "
CITATION = ("Wada, Kaneda, Saito & Sugiura (2024). Polos: Multimodal Metric Learning from Human Feedback "
            "for Image Captioning. CVPR.")
#: Rows of every forward pass of the head (the torch runner's fixed shape).
_HEAD_ROWS = 8


@register
class Polos(Metric):
    """Polos (Wada et al., 2024) from the user's checkpoint.

    Parameters
    ----------
    checkpoint : str or Path
        The Polos checkpoint: the released ``reprod.ckpt`` (read with
        ``torch.load(weights_only=True)``) or its ``state_dict`` saved as ``.safetensors``;
        ``hparams.yaml`` lies beside it, as ``polos.models.load_checkpoint`` expects.
    hparams : str or Path, optional
        The hyper-parameters file when it lies elsewhere (default: ``hparams.yaml`` beside the
        checkpoint).
    text_model : str or Path, optional
        A directory (or Hugging Face id already in the local cache) with the text encoder's
        ``config.json`` and tokenizer; default: ``pretrained_model`` of ``hparams.yaml``
        (``princeton-nlp/sup-simcse-roberta-base``). Its weights are not read.
    clip_tokenizer : str or Path, optional
        CLIP's BPE merges file (default: resource ``clip-bpe``; the ``polos`` wheel ships it).
    device, batch_size
        Torch device; texts and images a torch thread takes at a time (speed only).
    long_text : {"truncate"}
        Past the windows (RoBERTa's 512 tokens, CLIP's 77) the text is cut and counted
        (``trunc:N``, docs/LONG_CAPTIONS.md). CLIP's cut is the package's; the package itself
        fails on a text longer than RoBERTa's window, so past it there is no number to match.
    """

    family = "polos"
    variant = "polos"
    text_input = "raw"
    needs_images = True
    needs_references = True
    extras = ("image",)
    outputs = (
        OutputInfo("polos", "polos", "polos", (0.0, 1.0), True,
                   "Polos: max over references of a regressor on SimCSE and CLIP features, trained on "
                   "human judgments (Polaris)", CITATION,
                   undefined="NaN for a candidate with no references (the score is a maximum over them)"),
    )

    @classmethod
    def resources_for(cls, options: dict) -> tuple[str, ...]:
        return () if options.get("clip_tokenizer") is not None else ("clip-bpe",)

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """The checkpoint's and hparams' digests, and the tokenizer files'."""
        from ..digests import sha256_file
        from ._clip_models import model_sha256

        try:
            ckpt = Path(options["checkpoint"]).expanduser()
            hp = options.get("hparams")
            token = model_sha256(ckpt) + ":" + sha256_file(Path(hp).expanduser() if hp else ckpt.parent / "hparams.yaml")
            if options.get("clip_tokenizer") is not None:
                token += ":" + sha256_file(Path(options["clip_tokenizer"]).expanduser())
            if options.get("text_model") is not None:
                token += ":" + _dir_digest(Path(options["text_model"]).expanduser())
        except Exception:  # noqa: BLE001 - a missing file is reported when the family is built
            return None
        return token

    @classmethod
    def provenance(cls, options: dict) -> dict:
        """The released checkpoint was trained on Polaris' training split and selected on its
        validation split (configs/polos-trainer.yaml: early stopping on validation Pearson)."""
        return {"model": "polos", "trained_on": ["polaris"], "selected_on": ["polaris"], "design_chosen_on": []}

    def __init__(self, checkpoint: str | Path | None = None, hparams: str | Path | None = None,
                 text_model: str | Path | None = None, clip_tokenizer: str | Path | None = None,
                 device: str = "cpu", batch_size: int = 8, long_text: str = "truncate") -> None:
        self.long_text = _long_text.check_mode(self.family, long_text, ("truncate",))
        if checkpoint is None:
            raise InputError("polos needs the user's checkpoint: -O polos.checkpoint=PATH (Polos's released "
                             "reprod.ckpt, hparams.yaml beside it; docs/POLOS.md)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"polos: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        hp = Path(hparams).expanduser() if hparams is not None else None
        self.net = _load(Path(checkpoint).expanduser(), hp, text_model, clip_tokenizer, device)

    def statistics(self, candidates, references, **kw):
        return _long_text.statistics(self, self.family, self.long_text, candidates, references, **kw)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
                images: Sequence[str] | None = None, *, _warn_long: bool = True) -> MetricScores:
        from ._clip_models import image_embeddings, text_embeddings

        if images is None:
            raise InputError("polos reads the images: pass images=[one path per candidate] (CLI: --images DIR)")
        if len(images) != len(candidates):
            raise InputError(f"polos: {len(images)} images for {len(candidates)} candidates")
        for i, p in enumerate(images):
            if not isinstance(p, (str, Path)) or not str(p):
                raise InputError(f"polos: candidate {i} has no image ({p!r})")
        net = self.net
        n = len(candidates)
        texts = list(dict.fromkeys([*candidates, *(r for refs in references for r in refs)]))
        img, counts = image_embeddings(net.clip, [str(p) for p in images], batch_size=self.batch_size, disk=False)
        report(n, n + len(texts))
        clip_rows = text_embeddings(net.clip, [PROMPT + t for t in texts], batch_size=self.batch_size)
        sent, cut = net.sentences(texts, self.batch_size)
        report(n + len(texts), n + len(texts))
        at = {t: i for i, t in enumerate(texts)}
        pairs = [(i, at[r]) for i, refs in enumerate(references) for r in refs]
        feats = [_polos_features(sent, clip_rows, img, at[candidates[i]], j, i) for i, j in pairs]
        per_pair = net.head_scores(feats, self.batch_size)
        score = np.full(n, np.nan)
        for (i, _), s in zip(pairs, per_pair):
            score[i] = s if np.isnan(score[i]) else max(score[i], s)
        for t in texts:
            k = net.clip_cut(PROMPT + t)
            if k:
                cut[t] = cut.get(t, 0) + k
        out = MetricScores(
            corpus={"polos": float(np.mean(score)) if n else float("nan")},
            per_caption={"polos": score},
            signature_fields=net.fields(),
            details={"images": counts},
        )
        return _long_text.finish(out, self.family, self.long_text, net.window,
                                 *_long_text.row_cuts(cut, candidates, references), warn=_warn_long)


def _polos_features(sent, clip_rows, img, c: int, r: int, row: int) -> np.ndarray:
    from ._polos_model import features

    return features(sent[c], sent[r], img[row], clip_rows[c], clip_rows[r])


def _dir_digest(path: Path) -> str:
    """Digest of a text model directory's config and tokenizer files (what capeval reads of it)."""
    import hashlib

    from ..digests import sha256_file

    h = hashlib.sha256()
    for p in sorted(path.iterdir()) if path.is_dir() else []:
        if p.is_file() and p.suffix in {".json", ".txt", ".model"}:
            h.update(p.name.encode() + b"\0" + sha256_file(p).encode())
    return h.hexdigest()


@dataclass
class _Net:
    """The loaded network: the sentence encoder, CLIP (a ``ClipEncoder``) and the head."""

    hp: Any
    encoder: Any
    tok: Any
    window: int
    pad: int
    weights: Any
    gamma: Any
    clip: Any
    head: Any
    text_name: str
    workers: int

    def sentences(self, texts: list[str], batch_size: int) -> tuple[list[np.ndarray], dict[str, int]]:
        """One sentence embedding per text, and the tokens cut from each text past the window."""
        from ..resources.encoders import tokenizer_lock
        from ..resources.torch_runner import map_fixed
        from ._polos_model import sentence_vectors

        with tokenizer_lock(self.tok):
            ids = [list(r) for r in self.tok(texts, truncation=False)["input_ids"]] if texts else []
        cut: dict[str, int] = {}
        for k, (t, row) in enumerate(zip(texts, ids)):
            if len(row) > self.window:  # keep the end token, as truncation=True would
                cut[t] = len(row) - self.window
                ids[k] = row[:self.window - 1] + row[-1:]
        rows = [np.asarray(r, dtype=np.int64) for r in ids]

        def forward(idx: list[int]) -> list[np.ndarray]:
            return sentence_vectors(self.encoder, self.weights, self.gamma, self.hp.layer, self.hp.pool,
                                    self.pad, [rows[i] for i in idx])

        return map_fixed(forward, [len(r) for r in rows], per_task=batch_size, workers=self.workers), cut

    def head_scores(self, feats: list[np.ndarray], batch_size: int) -> list[float]:
        import torch

        from ..resources.torch_runner import map_fixed

        def forward(idx: list[int]) -> list[float]:
            with torch.inference_mode():
                x = torch.from_numpy(np.stack([feats[i] for i in idx]))
                return [float(v) for v in self.head(x)[:, 0].numpy()]

        return map_fixed(forward, [0] * len(feats), rows=_HEAD_ROWS, per_task=batch_size, workers=self.workers)

    def clip_cut(self, text: str) -> int:
        full = self.clip.full_ids([text])[0] if self.clip.full_ids is not None else []
        return max(0, len(full) - self.clip.context_length)

    def fields(self) -> dict[str, object]:
        from ._clip_image import PREPROCESS_ID
        from ._polos_model import describe

        return {"model": self.clip.model_sha256, "hparams": self.hp.digest[:12], "head": describe(self.hp),
                "text": f"{self.text_name}-trunc{self.window}", "clip": self.clip.arch,
                "pre": f"{PREPROCESS_ID}-{self.clip.n_px}", "cliptok": f"{self.clip.tokenizer}-trunc77",
                "prompt": PROMPT.strip(), "dtype": "float32", "device": self.clip.device}


def _load(path: Path, hparams: Path | None, text_model, clip_tokenizer, device: str) -> _Net:
    from ..resources.encoders import fork_safe_torch
    from ..resources.torch_runner import default_workers
    from . import _polos_model as pm
    from ._clip_models import model_sha256

    fork_safe_torch()
    hp = pm.read_hparams(path, hparams)
    sd = pm.read_state_dict(path)
    name = str(text_model) if text_model is not None else hp.pretrained_model
    encoder, tok, window, pad = pm.text_encoder(sd, str(Path(name).expanduser()) if text_model else name, path)
    n_states = int(encoder.config.num_hidden_layers) + 1
    weights, gamma = pm.mix_weights(sd, hp.layer, n_states, path)
    clip, embed = _clip(sd, path, model_sha256(path), clip_tokenizer, device)
    hidden = int(encoder.config.hidden_size)
    ff = pm.head(sd, hp, 4 * hidden + 6 * embed, path)
    encoder.to(device)
    ff.to(device)
    text_name = f"{encoder.config.model_type}-h{hidden}-l{n_states - 1}"
    return _Net(hp=hp, encoder=encoder, tok=tok, window=window, pad=pad, weights=weights, gamma=gamma,
                clip=clip, head=ff, text_name=text_name, workers=default_workers(device))


def _clip(sd: dict, path: Path, digest: str, clip_tokenizer, device: str):
    """CLIP from the checkpoint's ``clip.*`` weights (OpenAI's layout) as a ``ClipEncoder``, and
    its embedding size (the head's input size depends on it)."""
    import torch

    from ..digests import sha256_file
    from ..resources.clip import clip_bpe_path
    from ._clip_bpe import ClipBPE
    from ._clip_models import ClipEncoder
    from ._clip_openai import build

    sub = {k[len("clip."):]: v for k, v in sd.items() if k.startswith("clip.")}
    if "visual.conv1.weight" not in sub:
        raise InputError(f"{path} has no clip.visual.conv1.weight (not a PolosEstimator checkpoint with a ViT CLIP)")
    sub = {k: v for k, v in sub.items() if k not in ("input_resolution", "context_length", "vocab_size", "attn_mask")}
    net = build(sub).to(torch.device(device))
    bpe_path = clip_bpe_path(clip_tokenizer)
    bpe = ClipBPE(bpe_path)
    ctx = int(net.context_length)

    def embed_pixels(pixels: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return net.encode_image(torch.from_numpy(pixels).to(device)).cpu().numpy()

    def embed_ids(rows: list[list[int]]) -> np.ndarray:
        with torch.inference_mode():
            return net.encode_text(torch.tensor(rows, dtype=torch.long).to(device)).cpu().numpy()

    width, patch = sub["visual.conv1.weight"].shape[0], sub["visual.conv1.weight"].shape[-1]
    n_px = int(net.visual.input_resolution)
    enc = ClipEncoder("polos", digest, n_px, ctx, f"clip-bpe-{sha256_file(bpe_path)[:12]}", "float32", str(device),
                      embed_pixels, lambda texts: [list(r) for r in bpe.tokenize(texts, ctx)], embed_ids,
                      f"vit-w{width}-p{patch}-{n_px}px",
                      lambda texts: [[bpe.sot, *bpe.encode(t), bpe.eot] for t in texts])
    return enc, int(sub["text_projection"].shape[1])
