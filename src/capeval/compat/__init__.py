"""Drop-in replacements for code that already scores captions with other tools' APIs.

* :mod:`capeval.compat.pycocoevalcap`: pycocoevalcap 1.2's modules, classes, signatures, return
  types and printed lines, computed by capeval (no Java: the pure-Python PTB tokenizer and the
  native METEOR). Changing ``from pycocoevalcap...`` to ``from capeval.compat.pycocoevalcap...``
  is the only edit.
* :mod:`capeval.compat.ciderD`: the ``CiderD`` of the ruotianluo/cider fork used by
  self-critical training, reading df files converted from its pickles.
* :func:`install`: for code that cannot be edited, make ``import pycocoevalcap`` itself resolve
  to the shim (opt-in, for the running interpreter only).

Where the shim differs from pycocoevalcap on purpose, it says so once through :mod:`warnings`
(category :class:`CompatNotice`).
"""
from __future__ import annotations

from ._alias import install, uninstall
from ._notices import CompatNotice

__all__ = ["install", "uninstall", "CompatNotice"]
