"""Pre-gen values together with the signature that says what produced them."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .signature import pregen_signature
from .tiers import compute
from .tokens import TokenScores


@dataclass(frozen=True)
class PregenResult:
    values: dict[str, float]
    signature: str


def score(ts: TokenScores, names: Iterable[str] | None = None, rank_rule: str = "given") -> PregenResult:
    """All 504 values (or ``names``) with their signature.

    ``rank_rule`` names how the ranks were made: ``gt-logits`` for capeval's adapters
    (``signature.RANK_RULE_ADAPTER``), ``given`` for records made elsewhere.
    """
    return PregenResult(compute(ts, names), pregen_signature(ts, rank_rule))
