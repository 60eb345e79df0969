"""``install()``: make ``import pycocoevalcap`` resolve to :mod:`capeval.compat.pycocoevalcap`.

A finder at the front of ``sys.meta_path`` answers for ``pycocoevalcap`` and its submodules
with the shim's modules (the same module objects, so both names share state). Nothing is
written to site-packages (no ``.pth``): it lasts for the running interpreter, from the call on.
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


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        # The shim's own module object: its name, spec and globals stay the shim's.
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        """Already executed when imported under its own name."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        name = _target_name(fullname)
        if name is None:
            return None
        found = importlib.util.find_spec(name)
        if found is None:
            raise ModuleNotFoundError(
                f"capeval.compat.install() routes 'pycocoevalcap' to capeval's shim, which has no module "
                f"{fullname!r} (it provides eval, tokenizer.ptbtokenizer, bleu.bleu, meteor.meteor, rouge.rouge, "
                f"cider.cider, spice.spice); call capeval.compat.uninstall() to use the original package",
                name=fullname)
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
        if _target_name(n) is not None and getattr(m, "__name__", "").startswith(TARGET):
            del sys.modules[n]


def installed() -> bool:
    return _finder in sys.meta_path
