"""The optional compiled core of native METEOR (``capeval._meteor_speedups``, built from
``_meteor_speedups.c`` when a C compiler is present at install time).

Its functions equal Python twins here: ``pair_bound`` is :func:`.align.pair_bound` (one-word
and paraphrase matches, the score bound) and ``align_packed`` / ``align_stats`` are
:func:`.align.align_stats` of a pair's candidate matches (searching as
:func:`.align._resolve_stepwise`, which ``resolve`` is alone); ``paraphrase_matches`` is
:func:`.align.paraphrase_matches`, ``score_one`` is :func:`.score.score_one`,
``reference_phrases`` and ``positions`` are those of :mod:`.phrases`, ``phrases_within`` is
:func:`.resources._phrases_within`; ``word``, ``line`` and
``group`` pack what those read. The tests run both and compare with ``==``. ``core`` is the loaded module,
or None when it was not built or when the environment variable ``CAPEVAL_PURE_PYTHON`` is
set to a non-empty value other than "0"; callers read ``compiled.core`` at call time, so
tests can switch paths by assigning it.
"""
from __future__ import annotations

from types import ModuleType

from ..._compiled import load

#: Longest line the compiled aligner takes (its packed search keys must fit in 64 bits);
#: longer ones go to the Python aligner.
MAX_WORDS = 20000


def import_core() -> ModuleType:
    from ... import _meteor_speedups

    return _meteor_speedups


core = load(import_core)
