"""One-time notices where the compat classes differ from the tool they stand in for on purpose."""
from __future__ import annotations

import threading
import warnings


class CompatNotice(UserWarning):
    """capeval's drop-in gives other numbers or behaviour than the original here, by design."""


_issued: set[str] = set()
_lock = threading.Lock()


def notice(key: str, message: str, stacklevel: int = 3) -> None:
    """Warn with ``message`` the first time ``key`` comes up in this process."""
    with _lock:
        if key in _issued:
            return
        _issued.add(key)
    warnings.warn(message, CompatNotice, stacklevel=stacklevel)


def _forget() -> None:
    """Let every notice fire again (tests)."""
    with _lock:
        _issued.clear()
