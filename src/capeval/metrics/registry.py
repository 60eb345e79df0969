"""Registry of metric families and their outputs.

One explicit name table (:data:`OUTPUT_MODULES`) says which module defines each output; the
module is imported the first time one of its names is asked for, and registers its family
there (``@register``). Families may live above this package (the learned metrics live with
their training code in ``capeval.learn``, QACE in ``capeval.qace``): the table names them as
strings, so nothing here imports a layer above. Modules keep heavy imports (torch, spaCy) inside
functions, so loading a family stays cheap.
"""
from __future__ import annotations

import importlib
import threading

from ..errors import UnknownMetricError
from .base import Metric, OutputInfo

_M = "capeval.metrics."
#: Output name -> module whose import registers it. ``tests/metrics/test_registry.py`` checks it
#: against what the modules register, so a new output cannot be forgotten here.
OUTPUT_MODULES: dict[str, str] = {
    **dict.fromkeys(["bertscore_p", "bertscore_r", "bertscore_f"], _M + "bertscore"),
    **dict.fromkeys(["bleu1", "bleu2", "bleu3", "bleu4"], _M + "bleu"),
    **dict.fromkeys(["bleu1_smooth", "bleu2_smooth", "bleu3_smooth", "bleu4_smooth"], _M + "bleu_smooth"),
    **dict.fromkeys(["cider", "cider_d"], _M + "cider"),
    "meteor": _M + "meteor",
    "rouge_l": _M + "rouge",
    **dict.fromkeys(["sentsim_max", "sentsim_mean", "sentsim_centroid"], _M + "sentsim"),
    **dict.fromkeys(["spice", "spice_object", "spice_attribute", "spice_relation", "spice_color", "spice_count",
                     "spice_size"], _M + "spice"),
    "spider": _M + "spider",
    "ter": _M + "ter",
    "wembsim": _M + "wembsim",
    "wmd": _M + "wmd",
    "nneval": "capeval.learn.nneval_metric",
    "learned": "capeval.learn.learned_metric",
    **dict.fromkeys(["qace_ref", "qace_ref_f1", "qace_ref_bertscore", "qace_ref_answerability",
                     "qace_img", "qace_img_f1", "qace_img_bertscore", "qace_img_answerability"],
                    "capeval.qace.metric"),
}

#: Named metric sets, the one home of every default list: ``coco`` is what pycocoevalcap's
#: COCOEvalCap reports without SPICE (``capeval.score`` and ``capeval score``); ``ngram`` drops
#: METEOR, leaving the families that stream and need neither Java nor resources (``capeval
#: bench`` and ``score_stream`` defaults).
METRIC_SETS: dict[str, tuple[str, ...]] = {
    "coco": ("bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l", "cider_d"),
    "ngram": ("bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"),
}

_FAMILIES: dict[str, type[Metric]] = {}
_OUTPUTS: dict[str, type[Metric]] = {}
_discovered = False
_discover_lock = threading.Lock()  # a second thread must not see a half-filled registry


def register(cls: type[Metric]) -> type[Metric]:
    if cls.family in _FAMILIES and _FAMILIES[cls.family] is not cls:
        raise ValueError(f"metric family {cls.family!r} registered twice")
    _FAMILIES[cls.family] = cls
    for out in cls.outputs:
        owner = _OUTPUTS.get(out.name)
        if owner is not None and owner is not cls:
            raise ValueError(f"output {out.name!r} claimed by {owner.family} and {cls.family}")
        _OUTPUTS[out.name] = cls
    return cls


def _load_all() -> None:
    global _discovered
    if _discovered:
        return
    with _discover_lock:
        if _discovered:
            return
        for module in dict.fromkeys(OUTPUT_MODULES.values()):
            importlib.import_module(module)
        _discovered = True


def family_for(output: str) -> type[Metric]:
    cls = _OUTPUTS.get(output)
    if cls is not None:
        return cls
    module = OUTPUT_MODULES.get(output)
    if module is None:
        known = ", ".join(sorted(OUTPUT_MODULES))
        raise UnknownMetricError(f"unknown metric {output!r}; known metrics: {known}")
    # Importing one module (not every metric module) keeps a first call cheap.
    importlib.import_module(module)
    return _OUTPUTS[output]


def get_family(family: str) -> type[Metric]:
    cls = _FAMILIES.get(family)
    if cls is not None:
        return cls
    _load_all()
    try:
        return _FAMILIES[family]
    except KeyError:
        raise UnknownMetricError(
            f"unknown metric family {family!r}; known: {', '.join(sorted(_FAMILIES))}"
        ) from None


def list_metrics() -> list[OutputInfo]:
    """Every registered output, sorted by family then declaration order."""
    _load_all()
    rows: list[OutputInfo] = []
    for fam in sorted(_FAMILIES):
        rows.extend(_FAMILIES[fam].outputs)
    return rows
