"""``install()``: make ``import pycocoevalcap`` resolve to :mod:`capeval.compat.pycocoevalcap`.

A finder at the front of ``sys.meta_path`` answers for ``pycocoevalcap`` and its submodules
with the shim's modules (the same module objects, so both names share state). Nothing is
written to site-packages (no ``.pth``): it lasts for the running interpreter, from the call on.
A submodule the shim lacks is not found, as any missing module (``importlib.util.find_spec``
returns None; ``import`` raises ``ModuleNotFoundError``): :func:`uninstall` brings the original
package back. The shim's modules keep their own names, specs and paths through
``importlib.reload`` under the alias, so :func:`uninstall` always recognises them.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

ALIAS = "pycocoevalcap"
TARGET = "capeval.compat.pycocoevalcap"


def _target_name(fullname: str) -> str | None:
    if fullname == ALIAS or fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS):]
    return None


#: The import attributes of each shim module as imported under its own name. Loading it under
#: the alias sets its ``__spec__`` (and a reload under the alias its ``__name__``, ``__path__``,
#: ``__package__`` and ``__loader__``) to the alias's; :meth:`_AliasLoader.exec_module` puts
#: these back, so the module stays the shim's and :func:`uninstall` finds it.
_OWN_ATTRS: dict[str, dict[str, object]] = {}
_IMPORT_ATTRS = ("__name__", "__spec__", "__package__", "__loader__", "__path__", "__file__", "__cached__")


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        # The shim's own module object: its name, spec and globals stay the shim's.
        module = importlib.import_module(self.target)
        _OWN_ATTRS.setdefault(self.target, {k: module.__dict__[k] for k in _IMPORT_ATTRS if k in module.__dict__})
        return module

    def exec_module(self, module) -> None:
        """Already executed when imported under its own name: only its import attributes, which
        the import system has just set to the alias's, are restored."""
        module.__dict__.update(_OWN_ATTRS.get(self.target, {}))


class _AliasFinder(importlib.abc.MetaPathFinder):
    #: Lookups of installed files skip this finder (capeval.extras.find_installed): the files
    #: of pycocoevalcap (METEOR's jar and paraphrase table) are the real package's.
    answers_with_another_package = True

    def find_spec(self, fullname, path=None, target=None):
        name = _target_name(fullname)
        if name is None:
            return None
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent the shim lacks
            return None
        if found is None:  # the finder protocol: "not here", never an exception
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name),
                                               is_package=found.submodule_search_locations is not None)


_finder = _AliasFinder()


def install() -> None:
    """Route ``import pycocoevalcap`` (and its submodules) to capeval's shim from now on.

    Modules of the original package imported before the call are dropped from ``sys.modules``
    (with a warning): objects already bound to them elsewhere keep pointing at the original."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    loaded = [n for n, m in list(sys.modules.items())
              if _target_name(n) is not None and not getattr(m, "__name__", "").startswith(TARGET)]
    if loaded:
        warnings.warn(f"pycocoevalcap was imported before capeval.compat.install(): {', '.join(sorted(loaded))} "
                      "now re-import as capeval's shim, but names bound to the original stay the original",
                      stacklevel=2)
        for n in loaded:
            del sys.modules[n]


def uninstall() -> None:
    """Undo :func:`install`: ``import pycocoevalcap`` finds the original package again."""
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for n, m in list(sys.modules.items()):
        target = _target_name(n)
        if target is not None and (m is sys.modules.get(target) or getattr(m, "__name__", "").startswith(TARGET)):
            del sys.modules[n]


def installed() -> bool:
    return _finder in sys.meta_path
