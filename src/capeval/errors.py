"""Exception types. Every error names the offending item so users can find it."""


class CapevalError(Exception):
    """Base class for capeval errors."""


class InputError(CapevalError, ValueError):
    """Bad candidates, references, ratings or files; the message names the item."""


class OutputError(CapevalError, OSError):
    """An output that would overwrite an input, an existing file (without ``overwrite``) or
    another output of the same command, or a write that failed (full disk, no permission; the
    previous file is left as it was); the message names the files."""


class ResourceNotFound(CapevalError, FileNotFoundError):
    """A model, vector set, jar or dataset could not be located; the message says what to install."""


class ResourceDamaged(CapevalError, OSError):
    """A file that capeval wrote or ships (a converted resource cache, a benchmark data file)
    does not match its recorded checksum and could not be rebuilt; the message names the file."""


class ExternalToolError(CapevalError, RuntimeError):
    """A subprocess (Java METEOR, PTB jar, SPICE) failed or timed out."""


class UnknownMetricError(CapevalError, KeyError):
    """A metric name that is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown metric"


class UserCodeError(CapevalError, RuntimeError):
    """A plug-in or user metric failed while it was built, scored or closed (any exception of
    its own: ``ValueError``, ``RecursionError``, ``MemoryError``...) or ended the process it ran
    in; the message names the metric and where its code raised. The original exception is
    chained (``__cause__``) for a caller of the Python API."""


class WorkerDied(CapevalError, RuntimeError):
    """A worker process of a ``--jobs``/Ray run ended while scoring (``os._exit`` or a crash in
    a plug-in, the out-of-memory killer, a signal); the message names the metrics it ran."""
