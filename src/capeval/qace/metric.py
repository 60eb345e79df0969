"""QACE-Ref ("qace_ref") and the QACE-Img interface ("qace_img"); Lee et al., Findings of EMNLP 2021.

QACE-Ref asks questions about the candidate (one per noun chunk, plus counts and adjectives)
and answers them from the references; answers are compared by SQuAD F1, BERTScore F and
answerability, averaged per caption (``capeval.qace.pipeline``).

Backends are separate variants, none of them the paper's models:

* ``qace_ref_parse_scenegraph`` (default, offline): questions from the spaCy parse, answers read
  off each reference's scene graph, BERTScore with the packaged MiniLM.
* ``qace_ref_hf``: ``qg=``/``qa=`` Hugging Face ids or local paths of T5 models (the paper's are
  ``mrm8488/t5-base-finetuned-question-generation-ap`` and ``valhalla/t5-base-qa-qg-hl``).

``reduction``: ``mean`` (paper: per reference, then mean), ``max``, ``merged`` (all references as
one context). The question/answer tables are in ``Result.explanations["qace_ref"]``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from ..metrics.base import Metric, OutputInfo
from ..metrics.statistics import Aggregate, RowMean
from ..metrics.registry import register

CITATION = "Lee et al., Findings of EMNLP 2021 (QACE)"
VARIANT_OFFLINE = "qace_ref_parse_scenegraph"
VARIANT_HF = "qace_ref_hf"
_DESC = {
    "": "mean of token F1, BERTScore and answerability of the references' answers",
    "_f1": "SQuAD token F1 between the candidate's and the references' answers",
    "_bertscore": "BERTScore F between the candidate's and the references' answers",
    "_answerability": "share of the candidate's questions the references answer",
}


@register
class QaceRef(Metric):
    """QACE-Ref.

    Parameters
    ----------
    reduction : {"mean", "max", "merged"}
        Over references: per reference then mean (paper), max, or one merged context.
    qg, qa : str
        ``"parse"`` / ``"scenegraph"`` (offline) or Hugging Face ids / local paths of T5 models.
    bertscore_model : str, optional
        Encoder for answer BERTScore (default: the packaged all-MiniLM-L6-v2).
    vectors : str, optional
        Word vectors for slot matching (e.g. ``glove-6b-50d``); default none (lemma + WordNet).
    vector_threshold : float
        Cosine at which two words match through vectors.
    stopwords : str
        Stop-word list removed from answers (default ``nltk-153``, the paper's NLTK list).
    model, wordnet : spaCy pipeline and WordNet directory for the offline backend.
    """

    family = "qace_ref"
    # Offline, each caption's questions come from its own parse, its answers from its own
    # references' scene graphs, and the answer BERTScore has no padding floor and runs the
    # encoder on fixed-shape batches: a row depends on itself alone (the statistics contract
    # and streaming tests check it). The neural backends' T5 batches do not (cannot_stream).
    extras = ("semantic", "bertscore")
    variant = VARIANT_OFFLINE
    text_input = "raw"
    outputs = tuple(
        OutputInfo(f"qace_ref{s}", "qace_ref", VARIANT_OFFLINE, (0.0, 1.0), True, d, CITATION)
        for s, d in _DESC.items()
    )

    def __init__(self, reduction: str = "mean", qg: str = "parse", qa: str = "scenegraph",
                 bertscore_model: str | None = None, vectors: str | None = None,
                 vector_threshold: float = 0.8, stopwords: str = "nltk-153",
                 model: str | None = None, wordnet: str | None = None, batch_size: int = 32,
                 device: str = "cpu", long_text: str = "truncate"):
        from .hf import check_long_text
        from .pipeline import REDUCTIONS

        self.long_text = check_long_text(long_text)
        if reduction not in REDUCTIONS:
            raise InputError(f"qace_ref: reduction must be one of {REDUCTIONS}, got {reduction!r}")
        if (qg == "parse") != (qa == "scenegraph"):
            raise InputError("qace_ref: the offline backend needs qg='parse' with qa='scenegraph'; "
                             "neural backends need Hugging Face ids or paths for both")
        self.reduction, self.qg_name, self.qa_name = reduction, qg, qa
        self.bertscore_model = bertscore_model
        self.vectors, self.vector_threshold = vectors, float(vector_threshold)
        self.stopwords, self.model, self.wordnet = stopwords, model, wordnet
        self.batch_size, self.device = batch_size, device
        self.variant = VARIANT_OFFLINE if qg == "parse" else VARIANT_HF
        self._pipeline = None
        self._fields: dict[str, object] = {}

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        if options.get("qg", "parse") != "parse":
            return ("qace_ref with Hugging Face question generation and answering generates over padded batches "
                    "whose float32 rounding depends on the batch's other texts, so chunks would change its numbers; "
                    "stream the offline backend (qg='parse', qa='scenegraph') or score it in memory")
        return None

    def aggregate(self, outputs: tuple[str, ...]) -> Aggregate:
        # the mean, and 0.0 for no rows, as compute() gives it
        return RowMean(outputs, empty=0.0)

    def pipeline(self):
        if self._pipeline is None:
            from .pipeline import QacePipeline
            from .similarity import BERTScoreSimilarity

            if self.qg_name == "parse":
                from .offline_build import offline_components

                qg, qa, fields = offline_components(self.model, self.stopwords, self.vectors,
                                                    self.vector_threshold, self.wordnet)
            else:
                from .hf import HFQuestionAnswerer, HFQuestionGenerator

                qg = HFQuestionGenerator(self.qg_name, stopwords=self.stopwords, batch_size=self.batch_size,
                                         device=self.device, long_text=self.long_text)
                qa = HFQuestionAnswerer(self.qa_name, batch_size=self.batch_size, device=self.device,
                                        long_text=self.long_text)
                fields = {"qg": qg.id, "qa": qa.id, "stop": qg.stop_id}
            self._bs = BERTScoreSimilarity(self.bertscore_model)
            self._fields = dict(fields)
            self._pipeline = QacePipeline(qg, qa, self._bs)
        return self._pipeline

    def statistics(self, candidates, references, **kw):
        from ..metrics import _long_text

        # the mean, and 0.0 for no rows, as compute() gives it
        return _long_text.statistics(self, self.family, self.long_text, candidates, references, empty=0.0, **kw)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                _warn_long: bool = True) -> MetricScores:
        from ..metrics import _long_text

        out = self.pipeline().run(candidates, references, self.reduction)
        per_caption = {f"qace_ref{'' if k == 'qace' else '_' + k}": v for k, v in out.scores.items()}
        fields = dict(self._fields)
        fields.update({"sim": "f1+bertscore+answerability", "avg": "mean3", "red": self.reduction,
                       "bs": self._bs.id})
        res = MetricScores(
            corpus={k: float(v.mean()) if len(v) else 0.0 for k, v in per_caption.items()},
            per_caption=per_caption,
            signature_fields=fields,
            details={"explanations": out.explanations},
        )
        zero = np.zeros(len(candidates), dtype=np.int64)
        window = getattr(self.pipeline().qg, "window", None)  # the offline parser has none
        return _long_text.finish(res, self.family, self.long_text, window,
                                 zero if out.cut_texts is None else out.cut_texts,
                                 zero if out.cut_tokens is None else out.cut_tokens, warn=_warn_long)


_IMG_DESC = {
    "": "mean of token F1, BERTScore and answerability of the image's answers (visual QA)",
    "_f1": "SQuAD token F1 between the candidate's answers and the visual QA answers",
    "_bertscore": "BERTScore F between the candidate's answers and the visual QA answers",
    "_answerability": "mean 1 - p(unanswerable) of the visual QA model",
}


@register
class QaceImg(Metric):
    """QACE-Img: the candidate's questions answered from the image by a visual QA reader.

    capeval's API passes references; for this metric each caption's "references" are **one image
    id**, and ``images`` maps ids to region features ((36, 2054) arrays, BUTD format). ``reader``
    is a :class:`capeval.qace.hf.VisualT5Answerer` (or any object with its ``answer`` method and
    an ``id``); there is no default because the Visual-T5 weights are not distributed through a
    registry. Questions come from the offline parse generator, or from a T5 generator when
    ``qg`` is a Hugging Face id or path.
    """

    family = "qace_img"
    # its question generation, answering and BERTScore run models over batches whose float32
    # rounding depends on the batch's other texts: chunks would change its numbers
    streamable = False
    extras = ("semantic", "bertscore", "image")
    variant = "qace_img"
    text_input = "raw"
    outputs = tuple(
        OutputInfo(f"qace_img{s}", "qace_img", "qace_img", (0.0, 1.0), True, d, CITATION)
        for s, d in _IMG_DESC.items()
    )

    def __init__(self, reader=None, images=None, qg: str = "parse", bertscore_model: str | None = None,
                 stopwords: str = "nltk-153", model: str | None = None, wordnet: str | None = None,
                 batch_size: int = 32, device: str = "cpu"):
        from ..errors import ResourceNotFound

        if reader is None or images is None:
            raise ResourceNotFound(
                "qace_img needs reader=<capeval.qace.hf.VisualT5Answerer> and images={image id: region "
                "features}: the paper's Visual-T5 checkpoint and BUTD features are not on any registry "
                "(docs/QACE.md)")
        self.reader, self.images = reader, images
        self.qg_name, self.bertscore_model, self.stopwords = qg, bertscore_model, stopwords
        self.model, self.wordnet, self.batch_size, self.device = model, wordnet, batch_size, device
        self.variant = f"qace_img_{'parse' if qg == 'parse' else 'hf'}"

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        from .hf import ImageQA
        from .pipeline import QacePipeline
        from .similarity import BERTScoreSimilarity

        for i, refs in enumerate(references):
            if len(refs) != 1:
                raise InputError(f"qace_img: item {i} must give exactly one image id, got {len(refs)} entries")
        if self.qg_name == "parse":
            from .offline_build import offline_components

            qg, _, _ = offline_components(self.model, self.stopwords, None, 0.8, self.wordnet)
            qg_id = "parse"
        else:
            from .hf import HFQuestionGenerator

            qg = HFQuestionGenerator(self.qg_name, stopwords=self.stopwords, batch_size=self.batch_size,
                                     device=self.device)
            qg_id = qg.id
        bs = BERTScoreSimilarity(self.bertscore_model)
        out = QacePipeline(qg, ImageQA(self.reader, self.images), bs).run(candidates, references, "mean")
        per_caption = {f"qace_img{'' if k == 'qace' else '_' + k}": v for k, v in out.scores.items()}
        reader_id = getattr(self.reader, "id", type(self.reader).__name__)
        prompt = getattr(self.reader, "prompt_prefix", None)
        return MetricScores(
            corpus={k: float(v.mean()) if len(v) else 0.0 for k, v in per_caption.items()},
            per_caption=per_caption,
            signature_fields={"qg": qg_id, "vqa": reader_id, "prompt": repr(prompt) if prompt is not None else "?",
                              "stop": self.stopwords, "sim": "f1+bertscore+answerability", "avg": "mean3",
                              "bs": bs.id},
            details={"explanations": out.explanations},
        )
