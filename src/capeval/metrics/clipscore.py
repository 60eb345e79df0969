"""CLIP-S / RefCLIP-S and PAC-S / RefPAC-S: caption-image (and caption-reference) agreement in
a CLIP embedding space.

Hessel, Holtzman, Forbes, Le Bras & Choi (2021), "CLIPScore: A Reference-free Evaluation Metric
for Image Captioning", EMNLP:

    CLIP-S(c, v)       = w * max(cos(E_c, E_v), 0),                       w = 2.5
    RefCLIP-S(c, R, v) = H-Mean(CLIP-S(c, v), max(max_{r in R} cos(E_c, E_r), 0))

Sarto, Barraco, Cornia, Baraldi & Cucchiara (2023), "Positive-Augmented Contrastive Learning for
Image and Video Captioning Evaluation", CVPR: the same formulas with w = 2.0 and the CLIP
ViT-B/32 weights fine-tuned by PAC-S.

As the released scripts (jmhessel/clipscore ``clipscore.py``, aimagelab/pacscore
``evaluation/pac_score``) compute them:

* every text, candidate and reference alike, is prefixed with "A photo depicts " and tokenized
  by ``clip.tokenize(truncate=True)`` (77 tokens, the last kept one replaced by the end token);
* images go through CLIP's preprocessing (``_clip_image``);
* embeddings are divided by their L2 norm, and the dot products, the clip at 0, w and the
  harmonic mean are computed by the same numpy expressions in the embeddings' precision
  (float32; float16 with ``fp16``, as clipscore.py on a GPU);
* the corpus score is the mean of the per-caption scores (what the scripts print).

Two deliberate readings of the paper where the scripts differ or say nothing: the reference
cosine is clipped at 0 (the paper's formula; the scripts skip the clip, which changes a number
only when every reference has a negative cosine with the candidate), and the harmonic mean of
two zeros is 0 (the scripts give NaN). A candidate with no references has no RefCLIP-S: NaN,
declared as the output's defined "undefined" value.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..progress import report
from ..result import MetricScores
from . import _long_text
from .base import Metric, OutputInfo
from .registry import register

PROMPT = "A photo depicts"
CLIPSCORE_CITATION = (
    "Hessel, Holtzman, Forbes, Le Bras & Choi (2021). CLIPScore: A Reference-free Evaluation Metric "
    "for Image Captioning. EMNLP."
)
PACSCORE_CITATION = (
    "Sarto, Barraco, Cornia, Baraldi & Cucchiara (2023). Positive-Augmented Contrastive Learning for "
    "Image and Video Captioning Evaluation. CVPR."
)
_NO_REFS = "NaN for a candidate with no references (the harmonic mean needs a reference cosine)"


def with_prompt(prompt: str, text: str) -> str:
    """The scripts' prefixing: the prompt, one space (added when missing), the caption."""
    if not prompt:
        return text
    return (prompt if prompt.endswith(" ") else prompt + " ") + text


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm, as ``x / np.sqrt(np.sum(x**2, axis=1, keepdims=True))``,
    in the embeddings' own precision (float32; float16 from a half-precision model, as the
    scripts compute on a GPU)."""
    x = np.asarray(x)
    if x.dtype not in (np.float16, np.float32):
        x = x.astype(np.float32)
    return x / np.sqrt(np.sum(x ** 2, axis=1, keepdims=True))


def image_text_scores(img: np.ndarray, cand: np.ndarray, w: float) -> np.ndarray:
    """w * max(cos, 0) per row, from raw embeddings."""
    per = np.clip(np.sum(unit_rows(img) * unit_rows(cand), axis=1), 0, None)
    return per.dtype.type(w) * per


def reference_cosines(cand: np.ndarray, refs: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """max(max over the row's references of cos(c, r), 0) per candidate; NaN for a candidate
    that owns no reference row. ``owner[j]`` is the candidate of reference row j. Each maximum
    comes from ``c @ R.T``, the product the scripts take."""
    c = unit_rows(cand)
    r = unit_rows(refs) if len(refs) else np.zeros((0, c.shape[1]), c.dtype)
    out = np.full(n, np.nan, dtype=c.dtype)
    order = np.argsort(owner, kind="stable")
    starts = np.searchsorted(owner[order], np.arange(n + 1))
    for i in range(n):
        rows = order[starts[i]:starts[i + 1]]
        if len(rows):
            out[i] = max(np.max(c[i].dot(r[rows].T)), 0)
    return out


def harmonic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """2ab/(a+b) in the inputs' precision; 0 where both are 0 (NaN stays NaN)."""
    a = np.asarray(a)
    b = np.asarray(b, dtype=a.dtype)
    s = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        h = 2 * a * b / s
    h[s == 0] = 0
    return h


class _ClipFamily(Metric):
    """Shared engine of the two families; subclasses fix the outputs, w and the default model."""

    text_input = "raw"
    needs_images = True
    needs_references = False
    cache_revision = 2  # 2: embeddings from the torch runner's fixed-shape batches; 1: maxima from c @ R.T
    default_w: float
    default_resource: str
    score_name: str
    ref_name: str

    @classmethod
    def resources_for(cls, options: dict) -> tuple[str, ...]:
        """The default checkpoint's and BPE file's resources when those options are not given;
        given paths are hashed instead (:meth:`cache_token`)."""
        out = () if options.get("model") is not None else (cls.default_resource,)
        return out + (() if options.get("tokenizer") is not None else ("clip-bpe",))

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """SHA-256 of the weights (and of a BPE file given as an option), so replaced files
        never reuse cached scores."""
        from ..digests import sha256_file
        from ._clip_models import locate, model_sha256

        try:
            _, path = locate(options.get("model"), cls.default_resource, options.get("backend", "auto"))
            token = model_sha256(path)
            if options.get("tokenizer") is not None:
                token += ":" + sha256_file(Path(options["tokenizer"]).expanduser())
        except Exception:  # noqa: BLE001 - a missing file is reported when the family is built
            return None
        return token

    def __init__(
        self,
        model: str | Path | None = None,
        backend: str = "auto",
        tokenizer: str | Path | None = None,
        prompt: str = PROMPT,
        w: float | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        fp16: bool = False,
        quick_gelu: bool = True,
        embedding_cache: bool = True,
        long_text: str = "truncate",
    ) -> None:
        from ._clip_models import load

        self.long_text = _long_text.check_mode(self.family, long_text, ("truncate", "windows"))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"{self.family}: batch_size must be a positive integer, got {batch_size!r}")
        for name, flag in (("fp16", fp16), ("quick_gelu", quick_gelu), ("embedding_cache", embedding_cache)):
            if not isinstance(flag, bool):
                raise InputError(f"{self.family}: {name} must be True or False, got {flag!r}")
        if not isinstance(prompt, str) or any(ch in prompt for ch in "|\r\n"):
            raise InputError(f"{self.family}: prompt must be one line of text without '|', got {prompt!r}")
        w = self.default_w if w is None else w
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not np.isfinite(w) or w <= 0:
            raise InputError(f"{self.family}: w must be a positive number, got {w!r}")
        self.w = float(w)
        self.prompt = prompt
        self.batch_size = batch_size
        self.embedding_cache = embedding_cache
        self.encoder = load(model, default_resource=self.default_resource, backend=backend,
                            tokenizer=tokenizer, device=device, fp16=fp16, quick_gelu=quick_gelu)

    def statistics(self, candidates, references, **kw):
        return _long_text.statistics(self, self.family, self.long_text, candidates, references, **kw)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
                images: Sequence[str] | None = None, *, _warn_long: bool = True) -> MetricScores:
        from . import _clip_long
        from ._clip_image import PREPROCESS_ID
        from ._clip_models import image_embeddings, text_embeddings

        if images is None:
            raise InputError(f"{self.family} reads the images: pass images=[one path per candidate] "
                             "(CLI: --images DIR)")
        if len(images) != len(candidates):
            raise InputError(f"{self.family}: {len(images)} images for {len(candidates)} candidates")
        for i, p in enumerate(images):
            if not isinstance(p, (str, Path)) or not str(p):
                raise InputError(f"{self.family}: candidate {i} has no image ({p!r})")
        enc = self.encoder
        n = len(candidates)
        flat = [r for refs in references for r in refs]
        owner = np.repeat(np.arange(n), [len(refs) for refs in references]).astype(np.intp)
        total = n + len(flat)
        done = 0

        def step(k: int) -> None:
            nonlocal done
            done += k
            report(done, total)

        img, counts = image_embeddings(enc, list(images), batch_size=self.batch_size,
                                       disk=self.embedding_cache)
        step(n)
        cut: dict[str, int] = {}
        if self.long_text == "windows":
            texts = _clip_long.text_embeddings(enc, lambda t: with_prompt(self.prompt, t), [*candidates, *flat],
                                               batch_size=self.batch_size)
        else:
            prompted = [with_prompt(self.prompt, t) for t in [*candidates, *flat]]
            texts = text_embeddings(enc, prompted, batch_size=self.batch_size)
            by_prompted = _clip_long.cut_tokens(enc, prompted)
            cut = {t: by_prompted[p] for t, p in zip([*candidates, *flat], prompted) if p in by_prompted}
        step(len(flat))
        cand = texts[:n]
        score = image_text_scores(img, cand, self.w)
        ref = harmonic(score, reference_cosines(cand, texts[n:], owner, n))
        per_caption = {self.score_name: score.astype(np.float64), self.ref_name: ref.astype(np.float64)}
        corpus = {k: float(np.mean(v)) if len(v) else float("nan") for k, v in per_caption.items()}
        out = MetricScores(
            corpus=corpus,
            per_caption=per_caption,
            signature_fields={
                "backend": enc.backend,
                "model": enc.model_sha256,
                "arch": enc.arch,
                "prompt": self.prompt,
                "w": self.w,
                "pre": f"{PREPROCESS_ID}-{enc.n_px}",
                "cliptok": f"{enc.tokenizer}-trunc{enc.context_length}",
                "dtype": enc.dtype,
                "device": enc.device,
            },
            details={"images": counts},
        )
        return _long_text.finish(out, self.family, self.long_text, enc.context_length,
                                 *_long_text.row_cuts(cut, candidates, references), warn=_warn_long)


@register
class ClipScore(_ClipFamily):
    """CLIP-S and RefCLIP-S (Hessel et al., 2021), w = 2.5, OpenAI CLIP ViT-B/32 by default.

    Parameters
    ----------
    model : str or Path, optional
        An OpenAI-format checkpoint file (default: the resource ``clip-vit-b32``, OpenAI's
        ``ViT-B-32.pt``), a transformers ``CLIPModel`` directory, or a Hugging Face id that the
        local cache already holds. Nothing is downloaded.
    backend : {"auto", "openai", "open_clip", "transformers"}
        ``auto``: ``openai`` for a file, ``transformers`` for a directory or id.
    tokenizer : str or Path, optional
        CLIP's BPE merges file for the OpenAI-format backend (default: resource ``clip-bpe``).
    prompt : str
        Prefix of every text ("A photo depicts").
    w : float
        Rescaling weight (2.5).
    device, batch_size, fp16
        Torch device, images decoded at once and images/texts an encoder thread takes at a
        time (every forward pass has the torch runner's fixed shape, so no value depends on
        it), float16 weights (GPU only).
    quick_gelu : bool
        OpenAI's activation (True for every OpenAI-format release).
    embedding_cache : bool
        Keep image embeddings on disk under the capeval cache root, by image content and model.
    long_text : {"truncate", "windows"}
        Past the text tower's 77 tokens: ``truncate`` (default, ``clip.tokenize(truncate=True)``,
        the scripts' numbers) cuts, and the run says how many texts and tokens it cut (warning,
        ``details[family]["long_text"]``, ``trunc:N`` in the signature); ``windows`` averages the
        normalised embeddings of sentence-packed 77-token windows (``_clip_long``,
        docs/LONG_CAPTIONS.md).
    """

    family = "clip_s"
    extras = ("image",)
    variant = "clipscore"
    default_w = 2.5
    default_resource = "clip-vit-b32"
    score_name = "clip_s"
    ref_name = "refclip_s"
    outputs = (
        OutputInfo("clip_s", "clip_s", "clipscore", (0.0, 2.5), True,
                   "CLIP-S: w * max(cos(caption, image), 0), reference-free", CLIPSCORE_CITATION),
        OutputInfo("refclip_s", "clip_s", "clipscore", (0.0, 2.5), True,
                   "RefCLIP-S: harmonic mean of CLIP-S and the clipped best reference cosine",
                   CLIPSCORE_CITATION, undefined=_NO_REFS),
    )


@register
class PacScore(_ClipFamily):
    """PAC-S and RefPAC-S (Sarto et al., 2023), w = 2.0, the PAC-S ViT-B/32 checkpoint by
    default (resource ``pacs-vit-b32``); options as :class:`ClipScore`."""

    family = "pac_s"
    extras = ("image",)
    variant = "pacscore"
    default_w = 2.0
    default_resource = "pacs-vit-b32"
    score_name = "pac_s"
    ref_name = "refpac_s"
    outputs = (
        OutputInfo("pac_s", "pac_s", "pacscore", (0.0, 2.0), True,
                   "PAC-S: w * max(cos(caption, image), 0) with the PAC-S checkpoint, reference-free",
                   PACSCORE_CITATION),
        OutputInfo("refpac_s", "pac_s", "pacscore", (0.0, 2.0), True,
                   "RefPAC-S: harmonic mean of PAC-S and the clipped best reference cosine",
                   PACSCORE_CITATION, undefined=_NO_REFS),
    )
