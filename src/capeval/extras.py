"""The pip extras of capeval (pyproject.toml) as the code sees them: which Python modules each
one brings, whether they are importable now, and the one install command for what is missing.

A metric family names the extras it needs (``Metric.extras``); ``capeval.score`` checks them all
before any work, so a user learns every missing extra at once, and ``capeval metrics`` shows
them per metric. Availability is :func:`find_installed`: nothing is imported.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

from .errors import ResourceNotFound

#: extra -> the top-level modules the code imports from its distributions (not its data
#: packages: a resource such as WordNet or a vector set may come from elsewhere, and the
#: resource resolver names its own hint). ``tests/test_extras.py`` checks the names against
#: pyproject.toml.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    # coco's resources: the METEOR/PTB/SPICE jars and METEOR's paraphrase table, which native
    # METEOR (no Java) reads too; the default `capeval score` needs it for METEOR.
    "coco": ("pycocoevalcap",),
    "java": ("pycocoevalcap",),
    "semantic": ("spacy", "ot", "nltk"),
    "bertscore": ("torch", "transformers"),
    "image": ("torch", "transformers", "PIL", "ftfy"),
    "report": ("matplotlib",),
    "ray": ("ray",),
    "pregen": ("torch",),
    "torchmetrics": ("torch", "torchmetrics"),
}

#: extra -> the variable that supplies what capeval reads from it instead: coco's module is
#: needed for METEOR's files only (the families that need it declare it), which
#: ``$CAPEVAL_METEOR_JAR`` can point to.
SUPPLIED_BY_ENV: dict[str, str] = {"coco": "CAPEVAL_METEOR_JAR"}

#: Old extra names kept installable (pyproject.toml defines each as its target), never suggested.
EXTRA_ALIASES: dict[str, str] = {"java": "coco"}


def find_installed(name: str):
    """The spec of the installed module ``name`` (dotted names too), or None.

    ``importlib.util.find_spec`` answers from ``sys.modules`` first and asks every finder, so
    after ``capeval.compat.install()`` it returns capeval's shim for ``pycocoevalcap``, whose
    directory holds none of the real package's files (jars, paraphrase table). This asks the
    finders of ``sys.meta_path`` directly and skips any that answers for a name with another
    package (one with a true ``answers_with_another_package`` attribute, as that alias)."""
    spec = None
    path = None
    parts = name.split(".")
    for i in range(len(parts)):
        spec = None
        for finder in sys.meta_path:
            if getattr(finder, "answers_with_another_package", False):
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None and (spec := find(".".join(parts[: i + 1]), path)) is not None:
                break
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and i < len(parts) - 1:
            return None
    return spec


def _importable(module: str) -> bool:
    try:
        return find_installed(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package
        return False


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (none when its variable of
    :data:`SUPPLIED_BY_ENV` is set: the resolver then reads that path, or says it is wrong)."""
    var = SUPPLIED_BY_ENV.get(extra)
    if var is not None and os.environ.get(var):
        return []
    return [m for m in EXTRA_MODULES[extra] if not _importable(m)]


def missing_extras(extras: Iterable[str]) -> list[str]:
    """Those of ``extras`` (in order, once each, aliases under their current name) with a
    module that cannot be imported."""
    out: list[str] = []
    for extra in extras:
        extra = EXTRA_ALIASES.get(extra, extra)
        if extra not in out and missing_modules(extra):
            out.append(extra)
    return out


def install_command(extras: Iterable[str], models: Iterable[str] = ()) -> str:
    """The one command line that installs ``extras`` into a checkout of capeval (it is not on
    PyPI), then each of ``models`` with ``capeval models install``."""
    names = list(dict.fromkeys(EXTRA_ALIASES.get(e, e) for e in extras))
    steps = [f"pip install -e '.[{','.join(names)}]'"] if names else []
    steps += [f"capeval models install {m}" for m in models]
    return " && ".join(steps)


def install_hint(extras: Iterable[str], models: Iterable[str] = ()) -> str:
    """How to install ``extras`` (and then ``models``), as every message of capeval says it.

    capeval is installed from its checkout or from a wheel file; a requirement naming capeval
    with an extra would send pip to PyPI, where capeval is not, so no message may suggest one
    (tests/test_install_hints.py greps the sources, docs and CLI output for that form)."""
    names = list(dict.fromkeys(EXTRA_ALIASES.get(e, e) for e in extras))
    models = list(models)
    command = install_command(names, models)
    if not names:
        return command
    return (f"{command} in the capeval checkout (from a wheel file{', the pip step is' if models else ':'} "
            f"pip install '<capeval wheel>.whl[{','.join(names)}]'; '.[all]' installs every extra)")


def require(needs: Mapping[str, Iterable[str]]) -> None:
    """Raise :class:`ResourceNotFound` naming every missing extra, for ``{what: extras}``
    (e.g. ``{"learned": ("semantic", "bertscore")}``), with one command installing them all."""
    lacking: dict[str, list[str]] = {}
    for what, extras in needs.items():
        miss = missing_extras(extras)
        if miss:
            lacking[what] = miss
    if not lacking:
        return
    every = missing_extras(e for miss in lacking.values() for e in miss)
    parts = "; ".join(
        f"{what} needs " + ", ".join(f"[{e}] ({', '.join(missing_modules(e))} missing)" for e in miss)
        for what, miss in lacking.items()
    )
    raise ResourceNotFound(f"{parts}. Install {'it' if len(every) == 1 else 'them'} with: {install_hint(every)}")
