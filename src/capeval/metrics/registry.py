"""Registry of metric families and their outputs.

One explicit table (:data:`BUILTINS`: family -> module and outputs) says which module defines
each built-in; the module is imported the first time one of its names is asked for, and
registers its family there (``@register``). Families may live above this package (the learned metrics live with
their training code in ``capeval.learn``, QACE in ``capeval.qace``): the table names them as
strings, so nothing here imports a layer above; ``STRING_IMPORTS`` in tests/test_architecture.py
declares each such link, and the layer test fails on one it does not list. Modules keep heavy
imports (torch, spaCy) inside functions, so loading a family stays cheap.
"""
from __future__ import annotations

import functools
import importlib
import threading

from .. import _process
from ..guards import contained
from ..errors import InputError, UnknownMetricError
from .base import Metric, OutputInfo

_M = "capeval.metrics."
_L, _Q, _J = "capeval.learn.", "capeval.qace.", "capeval.judges."
#: Every built-in family: the module whose import registers it, and its output names. The one
#: place a built-in is named (CONTRIBUTING.md, As a built-in): :data:`OUTPUT_MODULES` and
#: :data:`BUILTIN_FAMILIES` derive from it, and ``tests/metrics/test_registry.py`` checks it
#: against what the modules register, so a new output cannot be forgotten here.
BUILTINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bertscore": (_M + "bertscore", ("bertscore_p", "bertscore_r", "bertscore_f")),
    "bleu": (_M + "bleu", ("bleu1", "bleu2", "bleu3", "bleu4")),
    "bleu_smooth": (_M + "bleu_smooth", ("bleu1_smooth", "bleu2_smooth", "bleu3_smooth", "bleu4_smooth")),
    "cider": (_M + "cider", ("cider",)),
    "cider_d": (_M + "cider", ("cider_d",)),
    "clip_s": (_M + "clipscore", ("clip_s", "refclip_s")),
    "pac_s": (_M + "clipscore", ("pac_s", "refpac_s")),
    "meteor": (_M + "meteor", ("meteor",)),
    "polos": (_M + "polos", ("polos",)),
    "rouge_l": (_M + "rouge", ("rouge_l",)),
    "sentsim": (_M + "sentsim", ("sentsim_max", "sentsim_mean", "sentsim_centroid")),
    "spice": (_M + "spice", ("spice", "spice_object", "spice_attribute", "spice_relation", "spice_color",
                             "spice_count", "spice_size")),
    "spider": (_M + "spider", ("spider",)),
    "ter": (_M + "ter", ("ter",)),
    "wembsim": (_M + "wembsim", ("wembsim",)),
    "wmd": (_M + "wmd", ("wmd",)),
    "nneval": (_L + "nneval_metric", ("nneval",)),
    "learned": (_L + "learned_metric", ("learned",)),
    "qace_ref": (_Q + "metric", ("qace_ref", "qace_ref_f1", "qace_ref_bertscore", "qace_ref_answerability")),
    "qace_img": (_Q + "metric", ("qace_img", "qace_img_f1", "qace_img_bertscore", "qace_img_answerability")),
    "clair": (_J + "metric", ("clair",)),
    "fleur": (_J + "metric", ("fleur",)),
    "reffleur": (_J + "metric", ("reffleur",)),
    "pairjudge": (_J + "pairwise", ("pairjudge",)),
}
#: Output name -> module whose import registers it (loaded on first use of a name).
OUTPUT_MODULES: dict[str, str] = {out: module for module, outs in BUILTINS.values() for out in outs}
#: Family names of the built-ins (a family may differ from its outputs: ``bleu`` has ``bleu1``..
#: ``bleu4``). Plug-ins and user metrics may take none of them: a plug-in registered as ``bleu``
#: would make the built-in's later import fail for the rest of the process.
BUILTIN_FAMILIES: frozenset[str] = frozenset(BUILTINS)

#: Named metric sets, the one home of every default list: ``coco`` is what pycocoevalcap's
#: COCOEvalCap reports without SPICE (``capeval.score`` and ``capeval score``); ``ngram`` drops
#: METEOR, leaving the families that stream and need neither Java nor resources (``capeval
#: bench`` and ``score_stream`` defaults).
METRIC_SETS: dict[str, tuple[str, ...]] = {
    "coco": ("bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l", "cider_d"),
    "ngram": ("bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"),
}

#: Entry-point group through which an installed distribution adds metric families: each entry
#: point's value is a :class:`Metric` subclass (``module:Class``). Read on the first lookup that
#: misses the built-ins (or by ``list_metrics``), never at ``import capeval``.
PLUGIN_GROUP = "capeval.metrics"

_FAMILIES: dict[str, type[Metric]] = {}
_OUTPUTS: dict[str, type[Metric]] = {}
#: families a user registered at run time (``register_user``); a newer definition replaces them
_USER: set[str] = set()
#: family -> "distribution==version" of each plug-in, part of its score-cache keys
_PLUGIN_ORIGIN: dict[str, str] = {}
_PLUGIN_ERRORS: list[str] = []
_discovered = False
_plugins_loaded = False
_discover_lock = threading.Lock()  # a second thread must not see a half-filled registry
_plugin_lock = threading.Lock()


def register(cls: type[Metric]) -> type[Metric]:
    if cls.family in _FAMILIES and _FAMILIES[cls.family] is not cls:
        raise ValueError(f"metric family {cls.family!r} registered twice")
    for out in cls.outputs:
        owner = _OUTPUTS.get(out.name)
        if owner is not None and owner is not cls:
            raise ValueError(f"output {out.name!r} claimed by {owner.family} and {cls.family}")
    _FAMILIES[cls.family] = cls
    for out in cls.outputs:
        _OUTPUTS[out.name] = cls
    return cls


def _check_metric_class(cls, what: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise InputError(f"{what} is {cls!r}, not a capeval.metrics.base.Metric subclass")
    for attr in ("family", "variant", "outputs"):
        if not hasattr(cls, attr):
            raise InputError(f"{what} ({cls.__name__}) does not define {attr!r}")
    taken = set(OUTPUT_MODULES) | set(METRIC_SETS) | BUILTIN_FAMILIES
    built_in = [o.name for o in cls.outputs if o.name in taken]
    if built_in or cls.family in taken:
        raise InputError(f"{what} ({cls.__name__}) uses the built-in name "
                                 f"{(built_in or [cls.family])[0]!r}; choose another name")


def register_user(cls: type[Metric]) -> type[Metric]:
    """Register a family defined at run time (a :class:`~capeval.metrics.user.UserMetric` or a
    wrapped callable). Redefining one, as a notebook does, replaces the earlier class; taking a
    built-in's or a plug-in's name is an error."""
    _check_metric_class(cls, f"user metric {getattr(cls, 'family', cls)!r}")
    load_plugins()
    with _discover_lock:
        old = _FAMILIES.get(cls.family)
        if old is not None and old is not cls:
            if cls.family not in _USER:
                raise InputError(f"user metric {cls.family!r} would replace the registered metric "
                                         f"family of that name; choose another name")
            del _FAMILIES[cls.family]
            for out in old.outputs:
                if _OUTPUTS.get(out.name) is old:
                    del _OUTPUTS[out.name]
        try:
            register(cls)
        except ValueError as e:
            raise InputError(f"user metric {cls.family!r}: {e}") from None
        _USER.add(cls.family)
    return cls


def _load_plugin(ep, what: str) -> type[Metric]:
    cls = ep.load()
    _check_metric_class(cls, what)
    with _discover_lock:
        register(cls)
    return cls


def load_plugins() -> None:
    """Import every ``capeval.metrics`` entry point once (thread-safe). A plug-in that fails to
    load or clashes with a registered name is recorded (:func:`plugin_errors`) and named by
    lookups that miss, so one broken distribution does not hide the others."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    with _plugin_lock:
        if _plugins_loaded:
            return
        from importlib.metadata import entry_points

        for ep in entry_points(group=PLUGIN_GROUP):
            dist = getattr(ep, "dist", None)
            origin = f"{dist.name}=={dist.version}" if dist is not None else "unknown"
            what = f"plug-in {ep.name!r} ({ep.value}, from {origin})"
            # Third-party code: SystemExit (even SystemExit(0)) at import must not end the
            # process silently, with no output and status 0; only Ctrl-C passes (guards.contained).
            previous = _process.running(what)  # an os._exit at import is named (cli/_ending.py)
            try:
                cls, exc = contained(functools.partial(_load_plugin, ep, what))
            finally:
                _process.restore(previous)
            if exc is not None:
                _PLUGIN_ERRORS.append(f"{what}: {type(exc).__name__}: {exc}")
                continue
            _PLUGIN_ORIGIN[cls.family] = origin
        _plugins_loaded = True


def plugin_errors() -> list[str]:
    load_plugins()
    return list(_PLUGIN_ERRORS)


def plugin_origin(cls: type[Metric]) -> str | None:
    """``distribution==version`` of a plug-in family; None for built-in and user families."""
    return _PLUGIN_ORIGIN.get(cls.family)


def close_names(name: object, known) -> list[str]:
    """The names of ``known`` that ``name`` most likely meant, best first: the one that differs
    only in case, ``-`` for ``_`` or ``.`` for ``_`` (``CIDEr``, ``CIDEr-D``, ``ROUGE_L``), else
    up to four close spellings (``bleu`` -> bleu4, bleu3, ...; ``blue4`` -> bleu4); [] when none
    is close. For "did you mean" in messages about metric, family and option names."""
    import difflib

    if not isinstance(name, str):
        return []
    folded = {k.lower().replace("-", "_"): k for k in sorted(known, reverse=True) if isinstance(k, str)}
    key = name.strip().lower().replace("-", "_").replace(".", "_")
    if key in folded:
        return [folded[key]]
    bare = {k.replace("_", ""): v for k, v in folded.items()}
    if key.replace("_", "") in bare:  # Bleu_4, rougeL, CIDErD
        return [bare[key.replace("_", "")]]
    return [folded[c] for c in difflib.get_close_matches(key, list(folded), n=4, cutoff=0.6)]


def did_you_mean(name: object, known) -> str:
    """``"did you mean bleu4, bleu3 or bleu2?"`` (see :func:`close_names`), or "" when no name is close."""
    close = close_names(name, known)
    if not close:
        return ""
    return "did you mean " + (close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]) + "?"


def third_party(family: str) -> str | None:
    """Who wrote a family capeval did not: ``"plug-in dist==version"`` or ``"user metric"``;
    None for a built-in. Errors of third-party code name it (``api.contained``)."""
    if family in _PLUGIN_ORIGIN:
        return f"plug-in {_PLUGIN_ORIGIN[family]}"
    return "user metric" if family in _USER else None


def _unknown(what: str, known, hint: str, listing: str = "capeval metrics, or capeval.list_metrics()"
             ) -> UnknownMetricError:
    broken = f"; plug-ins that failed to load: {'; '.join(_PLUGIN_ERRORS)}" if _PLUGIN_ERRORS else ""
    if hint:  # the full list (40-odd names) would bury the suggestion
        return UnknownMetricError(f"{what}; {hint} (all: {listing}){broken}")
    return UnknownMetricError(f"{what}; known: {', '.join(sorted(known))}{broken}")


def _load_all() -> None:
    global _discovered
    if _discovered:
        return
    with _discover_lock:
        if _discovered:
            return
        for module in dict.fromkeys(OUTPUT_MODULES.values()):
            importlib.import_module(module)
        _discovered = True


def family_for(output: str) -> type[Metric]:
    cls = _OUTPUTS.get(output)
    if cls is not None:
        return cls
    module = OUTPUT_MODULES.get(output)
    if module is None:
        load_plugins()
        cls = _OUTPUTS.get(output)
        if cls is not None:
            return cls
        known = set(OUTPUT_MODULES) | set(_OUTPUTS)
        hint = did_you_mean(output, known | set(METRIC_SETS))  # the sets: capeval.score and -m expand them
        raise _unknown(f"unknown metric {output!r}", known, hint)
    # Importing one module (not every metric module) keeps a first call cheap.
    importlib.import_module(module)
    return _OUTPUTS[output]


def get_family(family: str) -> type[Metric]:
    cls = _FAMILIES.get(family)
    if cls is not None:
        return cls
    _load_all()
    load_plugins()
    try:
        return _FAMILIES[family]
    except KeyError:
        raise _unknown(f"unknown metric family {family!r}", _FAMILIES, did_you_mean(family, _FAMILIES),
                       "the family field of capeval metrics --json") from None


def families_with(capability: str) -> list[str]:
    """Names of the registered families (built-in, plug-in and user) whose capability
    attribute (``streamable``, ``uses_df``, ``is_learned``...; see :class:`Metric`) is true,
    sorted: the one place a list of family names is derived, for messages."""
    if not isinstance(getattr(Metric, capability, None), bool):
        raise ValueError(f"{capability!r} is not a capability of Metric")
    _load_all()
    load_plugins()
    return sorted(fam for fam, cls in _FAMILIES.items() if getattr(cls, capability))


def list_metrics() -> list[OutputInfo]:
    """Every registered output (built-in, plug-in and user-registered), sorted by family then
    declaration order. Plug-ins that failed to load are warned about, naming them."""
    _load_all()
    load_plugins()
    if _PLUGIN_ERRORS:
        import warnings

        warnings.warn("capeval plug-ins that failed to load: " + "; ".join(_PLUGIN_ERRORS), stacklevel=2)
    rows: list[OutputInfo] = []
    for fam in sorted(_FAMILIES):
        rows.extend(_FAMILIES[fam].outputs)
    return rows
