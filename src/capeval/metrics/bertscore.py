"""BERTScore, computed as bert_score 0.3.12/0.3.13 computes it, with less repeated work.

Zhang, Kishore, Wu, Weinberger & Artzi (2020), "BERTScore: Evaluating Text Generation with
BERT", ICLR. Protocol (docs/METRICS.md, BERTScore): token embeddings from layer L, L2-normalised; each
candidate token takes its best cosine over the reference tokens (precision), each reference
token its best over the candidate tokens (recall); both are weighted means with weights
normalised to sum 1 (IDF off: 1 for every token but [CLS]/[SEP], which weigh 0); F = 2PR/(P+R)
with NaN → 0. With several references each of P, R and F is the maximum over the references,
separately, and rescaling X' = (X − b)/(1 − b) comes after the maximum.

bert_score's batching changes numbers in one place, and we reproduce it: it matches
``batch_size`` consecutive flattened (candidate, reference) pairs in one zero-padded matrix,
and the padding zeros take part in the maxima. So a token whose best cosine is negative scores
0 instead whenever the other sentence is shorter than the longest one in that batch (issue
#165: batched and one-at-a-time scores differ). With MiniLM this happens on Flickr8k-Expert
(best cosines go down to about -0.11; ignoring it moves scores by up to 0.01). We compute both
weighted sums per pair and pick, per flattened position, the one bert_score's batch gives
(``padding_floor=True``, default); ``padding_floor=False`` takes the true maxima instead.

Where bert_score repeats work and we do not (numbers agree to float32 rounding, ≤ 1e-6):

* each distinct sentence is tokenized (one batched call) and encoded once, through the torch
  runner (``capeval.resources.torch_runner``): batches of a fixed shape, 8 sentences of one
  token length (no padding positions), on threads with one intra-op thread each, at most
  ``torch.get_num_threads()`` at once, so a sentence's embeddings depend on its tokens alone,
  not on the thread count, other threads or the rest of the corpus; the model runs only its
  first L blocks;
* greedy matching runs once per distinct (candidate, reference) pair (Flickr8k-Expert: 84,960
  flattened pairs, 28,308 distinct) in batches of one (candidate, reference) length, so
  without padding or masks, on the same workers;
* IDF document frequencies come from the token ids of the distinct references, weighted by
  how often each occurs in the flattened list, instead of re-tokenizing every occurrence in
  a process pool.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._version import __version__
from ..errors import InputError
from ..result import MetricScores
from . import _long_text
from ._bertscore_baselines import Baseline, packaged_baseline, read_baseline
from ._bertscore_core import reference_counts, score_rows
from ._bertscore_idf import IdfCounts
from ._bertscore_windows import token_window
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "bertscore"
LONG_MODES = ("truncate", "windows")
CITATION = (
    "Zhang, Kishore, Wu, Weinberger & Artzi (2020). BERTScore: Evaluating Text Generation "
    "with BERT. ICLR."
)
# --------------------------------------------------------------------------- the metric


def bert_score_hash(
    model: str, layer: int, idf: bool, baseline_id: str | None, transformers_version: str
) -> str:
    """bert_score's ``get_hash`` format, with our version and the baseline's id made explicit."""
    text = "{}_L{}{}_version=capeval-{}(hug_trans={})".format(
        model, layer, "_idf" if idf else "_no-idf", __version__, transformers_version
    )
    if baseline_id is not None:
        text += f"-rescaled({baseline_id})"
    return text


@register
class BERTScore(Metric):
    """BERTScore P, R, F (max over references, per component).

    Parameters
    ----------
    model : str, optional
        ``minilm`` (default: the packaged sentence-transformers/all-MiniLM-L6-v2), ``mpnet``
        (all-mpnet-base-v2, if present locally), a Hugging Face id, or a local model directory.
    num_layers : int, optional
        Layer whose token embeddings are used (0 = embedding output). Default: bert-score's
        tuned layer when it has one for the model; 6 for MiniLM-L6, 8 for all-mpnet-base-v2
        (why: ``capeval.resources.encoders``); otherwise required.
    idf : bool or IdfCounts
        IDF weights from the references of this call, exactly as bert_score computes them; or
        the reference counts of a larger input (its corpus pre-pass, :meth:`prepass` merged over
        its parts), whose weights then apply, as a streamed run gives every chunk.
    rescale_with_baseline : bool
        Apply X' = (X − b)/(1 − b) with the baseline capeval computed for the model (see
        ``capeval/metrics/_bertscore_baselines``), or with ``baseline`` when given.
    baseline : str or Path, optional
        A bert_score-format baseline file (implies rescaling).
    batch_size : int
        bert_score's ``batch_size`` (default 64, as there). With ``padding_floor`` it sets
        which pairs bert_score matches together (see below); the encoder's batches have the
        torch runner's fixed shape whatever it is (``capeval.resources.torch_runner``).
    padding_floor : bool
        Default True: reproduce bert_score exactly. bert_score matches ``batch_size``
        consecutive (candidate, reference) pairs in one zero-padded matrix, so a token whose
        best cosine is negative scores 0 instead whenever the other sentence is shorter than
        the longest one in that batch (issue #165: batched and one-at-a-time scores differ).
        False takes the true maxima, so no score depends on its neighbours.
    device : str
        ``"cpu"`` (default) or a torch device string.
    long_text : {"truncate", "windows"}
        What happens past the tokenizer's limit (512 tokens for MiniLM): ``truncate`` (default,
        bert_score's behaviour, numbers unchanged) cuts the rest, and the run says how many texts
        and tokens it cut (warning, ``details["bertscore"]["long_text"]``, ``trunc:N`` in the
        signature); ``windows`` reads the whole text through overlapping windows
        (``capeval.metrics._bertscore_windows``, docs/LONG_CAPTIONS.md).
    """

    family = "bertscore"
    extras = ("bertscore",)
    variant = VARIANT
    outputs = tuple(
        OutputInfo(f"bertscore_{k}", "bertscore", VARIANT, (-1.0, 1.0), True, desc, CITATION)
        for k, desc in (
            ("p", "BERTScore precision (max over references)"),
            ("r", "BERTScore recall (max over references)"),
            ("f", "BERTScore F1 (max over references, separately from P and R)"),
        )
    )
    text_input = "raw"

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        # idf streams: its weights come from the pre-pass of the whole input (prepass).
        if options.get("padding_floor", True) and options.get("batch_size", 64) != 1:
            # The embeddings depend on each sentence alone (the torch runner); bert_score's
            # zero floor depends on the pairs a row shares a matching batch with: the lengths
            # of its neighbours in the whole input's flattened pair list, and its offset there,
            # which one pre-pass state for every chunk does not carry (docs/SCALE.md).
            return ("bertscore reproduces bert_score's batch padding (padding_floor), which depends on the "
                    "neighbouring rows, so chunks would change its numbers; stream it with padding_floor=False "
                    "or batch_size=1 (CLI: -O bertscore.padding_floor=false) or score it in memory")
        return None

    @classmethod
    def resources_for(cls, options: dict) -> tuple[str, ...]:
        """Only the encoder the ``model`` option names (a directory is not a registered resource)."""
        from ..resources.encoders import encoder_resource

        name = encoder_resource(options.get("model"))
        return (name,) if name else ()

    def __init__(
        self,
        model: str | Path | None = None,
        num_layers: int | None = None,
        idf: bool | IdfCounts = False,
        rescale_with_baseline: bool = False,
        baseline: str | Path | None = None,
        batch_size: int = 64,
        padding_floor: bool = True,
        device: str = "cpu",
        long_text: str = "truncate",
    ) -> None:
        from ..resources.encoders import resolve_encoder

        self.long_text = _long_text.check_mode("bertscore", long_text, LONG_MODES)

        self._idf_counts = idf if isinstance(idf, IdfCounts) else None
        for name, flag in (("idf", idf), ("padding_floor", padding_floor)):
            if not isinstance(flag, bool) and not (name == "idf" and self._idf_counts is not None):
                raise InputError(f"bertscore: {name} must be True or False, got {flag!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"bertscore: batch_size must be a positive integer, got {batch_size!r}")
        self.encoder = resolve_encoder(model)
        if num_layers is None:
            num_layers = self.encoder.default_layer
            if num_layers is None:
                raise InputError(
                    f"bertscore: no default layer is known for encoder {self.encoder.name!r}; "
                    "pass num_layers (bert-score tunes it per model on WMT16)"
                )
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
            raise InputError(f"bertscore: num_layers must be a non-negative integer, got {num_layers!r}")
        self.num_layers = num_layers
        if self._idf_counts is not None and self._idf_counts.encoder != self.encoder.name:
            raise InputError(f"bertscore: the idf counts were made with encoder {self._idf_counts.encoder!r}, "
                             f"not {self.encoder.name!r} (token ids differ)")
        self.idf = idf is not False
        self.rescale = bool(rescale_with_baseline or baseline is not None)
        self.baseline_path = baseline
        self.batch_size = batch_size
        self.padding_floor = padding_floor
        self.device = device

    def prepass(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> IdfCounts | None:
        """With idf from the scored references: their counts (:class:`IdfCounts`); None without
        idf or when counts were given."""
        if not self.idf or self._idf_counts is not None:
            return None
        if not references:
            return IdfCounts(self.encoder.name, {}, 0)
        from ..resources.encoders import load_encoder

        tokenizer, _ = load_encoder(self.encoder.location, self.device)
        df, m = reference_counts(tokenizer, references, full=self.long_text == "windows")
        return IdfCounts(self.encoder.name, df, m)

    @classmethod
    def prepass_options(cls, state: IdfCounts) -> dict:
        return {"idf": state}

    def _baseline(self, revision: str) -> Baseline | None:
        if not self.rescale:
            return None
        if self.baseline_path is not None:
            return read_baseline(self.baseline_path)
        return packaged_baseline(self.encoder.name, revision)

    def statistics(self, candidates, references, **kw):
        return _long_text.statistics(self, self.family, self.long_text, candidates, references, **kw)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                _warn_long: bool = True) -> MetricScores:
        import torch
        import transformers

        from ..resources.encoders import (
            load_encoder,
            num_hidden_layers,
            weights_revision,
        )

        revision = weights_revision(self.encoder.location)
        baseline = self._baseline(revision)  # fail on a missing baseline before any encoding
        tokenizer, model = load_encoder(self.encoder.location, self.device)
        depth = num_hidden_layers(model)
        if self.num_layers > depth:
            raise InputError(
                f"bertscore: num_layers={self.num_layers}, but encoder {self.encoder.name!r} "
                f"has {depth} layers"
            )
        b = baseline.row(self.num_layers) if baseline is not None else None

        cut: dict[str, int] = {}
        layer = score_rows(
            tokenizer, model, candidates, references, [self.num_layers],
            idf=self.idf, batch_size=self.batch_size, padding_floor=self.padding_floor,
            device=self.device, idf_weights=None if self._idf_counts is None else self._idf_counts.table(),
            long_text=self.long_text, cut=cut,
        )[self.num_layers]
        prf = layer.prf
        if b is not None:
            # After the max over references, in float32, as bert_score does.
            prf = (prf - b) / (np.float32(1.0) - b)
        per_caption = {f"bertscore_{k}": prf[:, j].astype(np.float64) for j, k in enumerate("prf")}
        baseline_id = baseline.id if baseline is not None else None
        out = MetricScores(
            corpus={k: float(np.mean(v)) for k, v in per_caption.items()},
            per_caption=per_caption,
            signature_fields={
                "model": self.encoder.name,
                "rev": revision,
                "layer": self.num_layers,
                "idf": self.idf,
                "rescale": baseline_id or "no",
                "mref": "max-per-component",
                "floor": f"batch{self.batch_size}" if self.padding_floor else "none",
                "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
                "device": self.device,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "hash": bert_score_hash(
                    self.encoder.name, self.num_layers, self.idf, baseline_id, transformers.__version__
                ),
            },
            details={
                "baseline": None if b is None else {"id": baseline_id, "P": float(b[0]), "R": float(b[1]), "F": float(b[2])},
                # < 0: some score depends on padding_floor (and then on batch_size).
                "min_best_cosine": layer.min_best_cosine,
            },
        )
        return _long_text.finish(out, self.family, self.long_text, token_window(tokenizer),
                                 *_long_text.row_cuts(cut, candidates, references), warn=_warn_long)
