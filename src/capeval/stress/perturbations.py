"""Every perturbation by name: the caption rules (:mod:`capeval.stress.rules`) and the
paragraph rules (:mod:`capeval.stress.paragraphs`), and the digest of the rules a run used."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from . import paragraphs
from . import rules as R

CAPTION = R.PERTURBATIONS
PARAGRAPH = paragraphs.PERTURBATIONS
BY_NAME: dict[str, R.Perturbation] = {p.name: p for p in (*CAPTION, *PARAGRAPH)}


def apply(name: str, ctx: R.Context, seed: int) -> R.Outcome:
    """Perturbation ``name`` of one item: the same text for the same seed, item and caption."""
    return BY_NAME[name].rule(ctx, R.rule_rng(seed, name, ctx.key))


def rule_digest(names: Sequence[str] = ()) -> str:
    """SHA-256 (12 hex digits) of the sources of the rules and word lists ``names`` use: any edit
    to one changes it. A run of caption rules only hashes what it did before paragraph rules
    existed, so its signature is unchanged."""
    mods = ["rules.py", "lexicon.py"]
    if any(n in {p.name for p in PARAGRAPH} for n in names):
        mods.append("paragraphs.py")
    h = hashlib.sha256()
    for mod in mods:
        h.update(Path(__file__).with_name(mod).read_bytes())
    return h.hexdigest()[:12]
