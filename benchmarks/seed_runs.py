"""The benchmark runs behind benchmarks/seed_tables.py: which table, loader options and metrics.

Kept apart from the table layout so that ``python benchmarks/seed_tables.py --warm RUN`` can fill
the score cache one benchmark at a time (SPICE-py and BERTScore take minutes each on 2 cores).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Run:
    name: str
    bench: str
    metrics: tuple[str, ...]
    load: dict = field(default_factory=dict)
    what: str = ""

    def command(self) -> str:
        """The ``capeval bench`` command giving the same numbers."""
        parts = ["capeval bench", self.bench, "-m", ",".join(self.metrics)]
        for k, v in self.load.items():
            parts += ["-D", f"{k}={v}"]
        return " ".join(parts)


# Kilickaya's BLEU is Lin & Och's smoothed sentence BLEU (order not stated: BLEU-4 assumed);
# NNEval, QACE and WEmbSim use the coco scorers (bleu1/bleu4). WMD and WEmbSim run on the GloVe
# 6B 50d vectors that capeval[semantic] installs (the papers' word2vec / GloVe 840B / fastText
# sets are not installable packages).
_SET = ("bleu1", "bleu4", "bleu4_smooth", "rouge_l", "meteor", "cider_d", "spice", "spider", "wmd", "wembsim")
_EACH = ("bleu4", "rouge_l", "meteor", "cider_d", "spice", "bertscore_f")

RUNS = {r.name: r for r in (
    Run("f8k-ek", "flickr8k-expert", _SET, {"protocol": "elliott-keller"},
        "Flickr8k-Expert, Elliott & Keller protocol (5,822 captions x 3 judges stacked)"),
    Run("composite", "composite", _SET, {}, "COMPOSITE, correctness, 11,985 rows"),
    Run("pascal", "pascal50s", _SET, {}, "PASCAL-50S, 4,000 pairs, 5 references (EXPERT labels)"),
    Run("abstract", "abstract50s", _SET, {}, "ABSTRACT-50S, 400 pairs, 48 references"),
    Run("distractors", "distractors", _SET, {"datasets": "flickr30k"},
        "forced-choice distractors rebuilt from the Flickr30k test captions (docs/DISTRACTORS.md)"),
    Run("f8k-each", "flickr8k-expert", _EACH, {"ref_mode": "each-mean"},
        "Flickr8k-Expert (16,992 rows), each reference scored alone, mean per row"),
    Run("composite-each", "composite", _EACH, {"ref_mode": "each-mean"},
        "COMPOSITE, each reference scored alone, mean per row"),
    Run("pascal-each", "pascal50s", _EACH, {"ref_mode": "each-mean"},
        "PASCAL-50S, each of the 5 references scored alone, mean per candidate"),
)}
