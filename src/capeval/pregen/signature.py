"""Signatures for pre-gen values: what was scored and how ranks were obtained."""
from __future__ import annotations

from ..signature import Signature
from .tokens import TokenScores

VARIANT = "pregen_tanti2018"
# How capeval's adapters rank a target: logits strictly greater than the target's.
RANK_RULE_ADAPTER = "gt-logits"


def pregen_signature(ts: TokenScores, rank_rule: str = "given") -> str:
    """``pregen_tanti2018|images:N|caps:M|tokens:K|rank:<rule>|version:X``.

    ``rank:given`` means the ranks came with the input (an npz made elsewhere).
    """
    return str(
        Signature.make(
            VARIANT,
            images=ts.n_images,
            caps=ts.n_captions,
            tokens=int(ts.probs.size),
            rank=rank_rule,
        )
    )
