"""Locate external things (jars, word vectors, encoders, WordNet) without downloading.

Order: an explicit path argument → the resource's environment variable → a file inside an
installed Python package → a default path. When nothing is found the error says exactly what
to install or which variable to set. Nothing here touches the network.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import extras
from ..errors import ResourceNotFound
from ..extras import install_hint as _extra_hint


@dataclass(frozen=True)
class ResourceSpec:
    """How to find one resource.

    name : registry key (``"meteor-jar"``).
    env : environment variable holding a path that overrides everything else.
    package, relpath : a file or directory inside an importable package (namespace packages ok).
    finder : optional callable returning a Path or None (for packages with their own API).
    defaults : extra candidate paths, tried last; ``{cache}`` stands for capeval's cache root
        (``paths.cache_root()``: ``$CAPEVAL_CACHE``, else ``~/.cache/capeval``), read at lookup.
    install_hint : what the user should install or set, shown when missing.
    what : how messages name it, when ``name`` would mislead (METEOR's native backend reads the
        jar's data, never runs it).
    """

    name: str
    env: str
    install_hint: str
    what: str = ""
    package: str | None = None
    relpath: str | None = None
    finder: Callable[[], Path | None] | None = None
    defaults: tuple[str, ...] = field(default_factory=tuple)


_SPECS: dict[str, ResourceSpec] = {}


def register_resource(spec: ResourceSpec) -> ResourceSpec:
    _SPECS[spec.name] = spec
    return spec


#: Modules that register resource specs at import (cheap: no heavy dependencies), so that
#: :func:`list_resources` (which feeds score-cache keys) is the same in every process.
RESOURCE_MODULES = ("capeval.resources.encoders", "capeval.resources.vectors", "capeval.resources.wordnet",
                    "capeval.resources.clip")


def _load_resource_modules() -> None:
    for module in RESOURCE_MODULES:
        importlib.import_module(module)


def list_resources() -> list[ResourceSpec]:
    _load_resource_modules()
    return [_SPECS[k] for k in sorted(_SPECS)]


def package_dir(package: str) -> Path | None:
    """The directory of the installed package ``package`` (never a module aliased to that name,
    as ``capeval.compat.install()`` aliases pycocoevalcap: :func:`capeval.extras.find_installed`)."""
    try:
        spec = extras.find_installed(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    if spec.origin:
        return Path(spec.origin).parent
    return None


def get_spec(name: str) -> ResourceSpec:
    """The registered spec of resource ``name`` (:class:`ResourceNotFound` when unknown)."""
    if name not in _SPECS:
        _load_resource_modules()
    if name not in _SPECS:
        raise ResourceNotFound(f"unknown resource {name!r}; known: {', '.join(sorted(_SPECS))}")
    return _SPECS[name]


def default_path(default: str) -> Path:
    """One of a spec's ``defaults`` as a path (``{cache}`` expanded now, so a changed
    ``$CAPEVAL_CACHE`` is followed)."""
    if default.startswith("{cache}"):
        from ..paths import cache_root

        return cache_root() / default[len("{cache}"):].lstrip("/")
    return Path(default).expanduser()


def resolve(name: str, path: str | os.PathLike | None = None) -> Path:
    """Return the path of resource ``name`` or raise :class:`ResourceNotFound`."""
    spec = get_spec(name)
    tried: list[str] = []
    if path is not None:
        p = Path(path).expanduser()
        if p.exists():
            return p
        raise ResourceNotFound(f"{name}: the path given does not exist: {p}")
    env_val = os.environ.get(spec.env)
    if env_val:
        p = Path(env_val).expanduser()
        if p.exists():
            return p
        raise ResourceNotFound(f"{name}: ${spec.env} points to a missing path: {p}")
    tried.append(f"${spec.env} (unset)")
    if spec.package:
        base = package_dir(spec.package)
        if base is not None:
            p = base / spec.relpath if spec.relpath else base
            if p.exists():
                return p
            tried.append(str(p))
        else:
            tried.append(f"package {spec.package} (not installed)")
    if spec.finder is not None:
        p = spec.finder()
        if p is not None and Path(p).exists():
            return Path(p)
        tried.append(f"{spec.name} finder")
    for d in spec.defaults:
        p = default_path(d)
        if p.exists():
            return p
        tried.append(str(p))
    raise ResourceNotFound(
        f"{spec.what or name} not found (tried: {'; '.join(tried)}). {spec.install_hint}"
    )


# Resources the foundation and SPICE's jar backend need, registered here so that every process
# lists the same resources (score-cache keys). Other modules register theirs next to the code
# using them, in a module of RESOURCE_MODULES.
register_resource(
    ResourceSpec(
        name="spice-jar",
        env="CAPEVAL_SPICE_JAR",
        package="pycocoevalcap",
        relpath="spice/spice-1.0.jar",
        install_hint=f"Install pycocoevalcap==1.2, the coco extra: {_extra_hint(['coco'])}; or set "
        "CAPEVAL_SPICE_JAR to spice-1.0.jar (its lib/ directory must sit beside it).",
    )
)
register_resource(
    ResourceSpec(
        name="corenlp-3.6.0",
        env="CAPEVAL_CORENLP_DIR",
        install_hint="SPICE's jar backend needs Stanford CoreNLP 3.6.0: download "
        "stanford-corenlp-full-2015-12-09 from nlp.stanford.edu and set CAPEVAL_CORENLP_DIR to the "
        "directory holding stanford-corenlp-3.6.0.jar and stanford-corenlp-3.6.0-models.jar. "
        "Without it use the default backend='py' (spice_py_spacy, an approximation).",
    )
)
register_resource(
    ResourceSpec(
        name="meteor-jar",
        env="CAPEVAL_METEOR_JAR",
        package="pycocoevalcap",
        relpath="meteor/meteor-1.5.jar",
        what="METEOR's resources (coco's meteor-1.5.jar, whose word lists the default native backend reads "
        "without Java, and data/paraphrase-en.gz beside it)",
        install_hint="They come with pycocoevalcap 1.2, a dependency of capeval: pip install pycocoevalcap==1.2"
        "; or set CAPEVAL_METEOR_JAR to coco's meteor-1.5.jar (its data/paraphrase-en.gz must sit beside it).",
    )
)
register_resource(
    ResourceSpec(
        name="ptb-jar",
        env="CAPEVAL_PTB_JAR",
        package="pycocoevalcap",
        relpath="tokenizer/stanford-corenlp-3.4.1.jar",
        install_hint=f"Install pycocoevalcap==1.2, the coco extra: {_extra_hint(['coco'])}; or set "
        "CAPEVAL_PTB_JAR to stanford-corenlp-3.4.1.jar.",
    )
)


def java_executable() -> str:
    """Path of ``java``; clear error when Java is missing."""
    import shutil

    java = os.environ.get("CAPEVAL_JAVA") or shutil.which("java")
    if not java:
        raise ResourceNotFound(
            "Java was not found on PATH (needed by METEOR and the ptb-java tokenizer). Install a "
            "JRE >= 8 (Debian: apt install default-jre-headless) or set CAPEVAL_JAVA to the java binary."
        )
    return java
