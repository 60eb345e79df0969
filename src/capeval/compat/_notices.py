"""One-time notices where the compat classes differ from the tool they stand in for on purpose."""
from __future__ import annotations

import sys
import threading
import warnings


class CompatNotice(UserWarning):
    """capeval's drop-in gives other numbers or behaviour than the original here, by design."""


_issued: set[str] = set()
_lock = threading.Lock()


def user_stacklevel() -> int:
    """``stacklevel`` for a warning raised in :func:`notice` that points at the first caller
    outside this package (the user's line, not the shim's)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(__package__ + "."):
        frame, level = frame.f_back, level + 1
    return level


def notice(key: str, message: str, category: type[Warning] = CompatNotice) -> None:
    """Warn with ``message`` the first time ``key`` comes up in this process."""
    with _lock:
        if key in _issued:
            return
        _issued.add(key)
    warnings.warn(message, category, stacklevel=user_stacklevel())


def _forget() -> None:
    """Let every notice fire again (tests)."""
    with _lock:
        _issued.clear()
