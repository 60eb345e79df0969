"""ABSTRACT-50S pair categories (HC / HI) derived from the pairs themselves.

The files do not mark the categories (docs/DATA_FORMATS.md, ABSTRACT-50S; docs/ABSTRACT50S.md).
What the data does show:

* every target scene (identified by its 48 reference sentences, which are exactly one
  ``abs_sent`` entry of ``abstract50S.mat``) has exactly two pairs, and they share one
  candidate sentence. HC pairs two held-out human captions of the scene; HI pairs one of them
  with a caption of another scene. The shared sentence is therefore one of the scene's own
  captions, and one of the two pairs is HC, the other HI;
* **identity**: a sentence is a held-out caption of one scene only. A pair whose other sentence
  is a caption of a different scene (shared there, or the HC partner there) is the HI pair; a
  pair whose other sentence is already known as one of this scene's captions is the HC pair.
  Applied until nothing changes;
* **order**: in every HC pair found by identity alone the shared sentence is B (the first
  candidate), while in HI pairs it is B or C about equally often. So a scene whose shared
  sentence is C in one pair has that pair as its HI pair.

Human votes are not used (they are what the benchmark measures); the tests only check, as a
sanity check, that HI pairs found this way have lopsided votes. Scenes that neither rule decides
get ``"undetermined"`` for both pairs.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

from ..errors import InputError

HC, HI, UNDETERMINED = "HC", "HI", "undetermined"


RULES = ("order", "identity")


def derive_categories(
    pairs: Sequence[tuple[str, str]], scenes: Sequence[Hashable], rules: Sequence[str] = RULES
) -> tuple[list[str], list[str]]:
    """Category and evidence (``"order"``, ``"identity"`` or ``""``) for each pair.

    ``rules`` selects the rules (both by default; the tests derive with identity alone to
    check the order rule against it).
    ``pairs[j]`` is (B, C); ``scenes[j]`` identifies pair *j*'s target scene. Raises
    :class:`InputError` when the data do not have the structure described above (a scene
    without exactly two pairs sharing one sentence, or contradicting evidence).
    """
    if unknown := set(rules) - set(RULES):
        raise InputError(f"abstract50s categories: unknown rules {sorted(unknown)}; choose from {RULES}")
    if len(pairs) != len(scenes):
        raise InputError(f"{len(pairs)} pairs but {len(scenes)} scene ids")
    by_scene: dict[Hashable, list[int]] = {}
    for j, s in enumerate(scenes):
        by_scene.setdefault(s, []).append(j)
    info: dict[Hashable, tuple[int, int, str, str, str]] = {}
    home: dict[str, Hashable] = {}  # sentence -> the scene it is a held-out caption of
    for s, js in by_scene.items():
        if len(js) != 2:
            raise InputError(f"abstract50s: scene of pair {js[0]} has {len(js)} pairs, expected 2")
        j1, j2 = js
        shared = set(pairs[j1]) & set(pairs[j2])
        if len(shared) != 1 or len(set(pairs[j1])) != 2 or len(set(pairs[j2])) != 2:
            raise InputError(f"abstract50s: pairs {j1} and {j2} (one scene) do not share exactly one sentence")
        (s0,) = shared
        (o1,) = set(pairs[j1]) - shared
        (o2,) = set(pairs[j2]) - shared
        _claim(home, s0, s, j1)
        info[s] = (j1, j2, s0, o1, o2)

    cat: dict[int, str] = {}
    why: dict[int, str] = {}

    def decide(s, hc: int, hi: int, evidence: str) -> None:
        j1, j2, _, o1, o2 = info[s]
        if hc in cat:
            if cat[hc] != HC:
                raise InputError(f"abstract50s: contradicting evidence for pairs {j1} and {j2}")
            return
        cat[hc], cat[hi] = HC, HI
        why[hc] = why[hi] = evidence
        _claim(home, o1 if hc == j1 else o2, s, hc)

    for s, (j1, j2, s0, _, _) in (info.items() if "order" in rules else ()):
        first1, first2 = pairs[j1][0] == s0, pairs[j2][0] == s0
        if first1 != first2:
            decide(s, j1 if first1 else j2, j2 if first1 else j1, "order")
    changed = "identity" in rules
    while changed:
        changed = False
        for s, (j1, j2, _, o1, o2) in info.items():
            h1, h2 = home.get(o1), home.get(o2)
            foreign1, foreign2 = h1 is not None and h1 != s, h2 is not None and h2 != s
            if (foreign1 and foreign2) or (h1 == s and h2 == s):
                raise InputError(f"abstract50s: contradicting evidence for pairs {j1} and {j2}")
            if foreign1 or h2 == s:
                hc, hi = j2, j1
            elif foreign2 or h1 == s:
                hc, hi = j1, j2
            else:
                continue
            if hc not in cat:
                changed = True
            decide(s, hc, hi, why.get(hc, "identity"))
    return [cat.get(j, UNDETERMINED) for j in range(len(pairs))], [why.get(j, "") for j in range(len(pairs))]


def _claim(home: dict, sentence: str, scene: Hashable, pair: int) -> None:
    if home.setdefault(sentence, scene) != scene:
        raise InputError(
            f"abstract50s: sentence {sentence[:60]!r} (pair {pair}) is a caption of two scenes"
        )


def summary(categories: Sequence[str]) -> str:
    """``HC=138,HI=138,undetermined=124`` for the protocol."""
    c = Counter(categories)
    return ",".join(f"{k}={c[k]}" for k in (HC, HI, UNDETERMINED))
