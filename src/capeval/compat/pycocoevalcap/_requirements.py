"""What the shim's scorers read, checked before any work, so that a missing piece is never
found one at a time: ``COCOEvalCap.evaluate()`` names everything its five scorers lack (METEOR's
resources, SPICE-py's spaCy parser, NLTK and WordNet database) in one error, with one command
installing all of it.

Nothing is imported: extras are checked with :func:`capeval.extras.find_installed`, resources
with the resolver.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from ... import extras
from ...errors import ResourceNotFound
from ...resources.resolver import get_spec, resolve


def _module_found(name: str) -> bool:
    try:
        return extras.find_installed(name) is not None
    except (ImportError, ValueError):
        return False


def _meteor(missing: list[str], need_extras: list[str], other: list[str]) -> None:
    try:
        jar = resolve("meteor-jar")
    except ResourceNotFound as exc:
        if os.environ.get(get_spec("meteor-jar").env):
            other.append(str(exc))  # the user's own path is wrong: installing would not fix it
        else:
            missing.append("METEOR's resources (pycocoevalcap 1.2's meteor-1.5.jar and paraphrase table)")
            need_extras.append("coco")
        return
    para = jar.parent / "data" / "paraphrase-en.gz"
    if not para.is_file():
        other.append(f"METEOR's paraphrase table is missing: expected {para} beside {jar}")


def _spice(missing: list[str], need_extras: list[str], models: list[str], other: list[str]) -> None:
    from ...scenegraph.parser import DEFAULT_MODEL

    lacking = [m for m in ("spacy", "nltk", DEFAULT_MODEL) if not _module_found(m)]
    if lacking:
        missing.append(f"SPICE-py's parser ({', '.join(lacking)})")
        need_extras.append("semantic")
    from ...resources.wordnet import wordnet_dir

    try:
        wordnet_dir()
    except ResourceNotFound as exc:
        if os.environ.get(get_spec("wordnet").env):
            other.append(str(exc))
        else:
            missing.append("SPICE-py's WordNet 3.0 database")
            models.append("wordnet")


def require(scorers: Iterable[str], who: str) -> None:
    """Raise :class:`ResourceNotFound` naming everything ``scorers`` (``"METEOR"``, ``"SPICE"``)
    lack, for ``who`` (the call the user made), with one command installing all of it."""
    missing: list[str] = []
    need_extras: list[str] = []
    models: list[str] = []
    other: list[str] = []
    scorers = set(scorers)
    if "METEOR" in scorers:
        _meteor(missing, need_extras, other)
    if "SPICE" in scorers:
        _spice(missing, need_extras, models, other)
    if not missing and not other:
        return
    parts = []
    if missing:
        parts.append(f"{who} lacks {'; '.join(missing)}. Install everything with: "
                     f"{extras.install_hint(need_extras, models)}")
    parts += other
    raise ResourceNotFound(". ".join(parts))
