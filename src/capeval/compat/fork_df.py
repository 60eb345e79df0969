"""Document-frequency files of the ruotianluo/cider fork (``data/<name>.p``), read without running them.

The fork's file is a Python pickle of ``{"document_frequency": {(w1, ..., wk): df, ...},
"ref_len": N}`` (``document_frequency`` usually a ``collections.defaultdict(float)``), written by
self-critical training's ``prepro_ngrams.py``; the fork loads it with ``encoding="latin1"``.

Unpickling runs whatever the file tells it to, so capeval does not do it by default:
:func:`read_fork_df` uses an unpickler that can build only dicts, tuples, lists, strings and
numbers (and the ``defaultdict(float)`` the structure is documented with) and refuses anything
else before it runs. ``capeval compat convert-cider-df IN.p OUT.json`` writes the result as a
capeval df file (:mod:`capeval.dffile`); ``allow_pickle=True`` is the escape hatch for a trusted
file the restricted reader refuses.
"""
from __future__ import annotations

import collections
import hashlib
import io
import math
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..guards import MAX_EXACT_INT, MAX_PICKLE_BYTES, prescan_pickle, read_regular
from ..errors import InputError
from ..metrics.cider import N_ORDER, DocumentFrequency
from ._notices import user_stacklevel

#: The only globals a df pickle may name: the defaultdict and its default factory.
_ALLOWED = {
    ("collections", "defaultdict"): collections.defaultdict,
    ("builtins", "float"): float, ("__builtin__", "float"): float,
    ("builtins", "int"): int, ("__builtin__", "int"): int,
}

PICKLE_RISK = ("unpickling runs any code the file carries (a pickle can call any Python function while it "
               "loads); use allow_pickle=True only for a file from a source you trust. "
               "`capeval compat convert-cider-df IN.p OUT.json` reads the documented structure without running code.")


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, path: str):
        super().__init__(file, encoding="latin1")  # as the fork loads it: Python 2 str -> latin-1 text
        self._path = path

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise InputError(
                f"{self._path}: the pickle refers to {module}.{name}; a CIDEr df file holds only dicts, tuples, "
                "strings and numbers (and collections.defaultdict(float)). Refused without running it.") from None

    def persistent_load(self, pid):
        raise InputError(f"{self._path}: the pickle holds a persistent reference; not a CIDEr df file")


@dataclass
class ForkDf:
    """A fork df file read and checked."""

    df: dict[str, float]
    n_units: int
    skipped: int  #: n-grams no caption can produce (empty, words with whitespace, over 4 words)
    sha256: str

    def to_document_frequency(self, source: str | None = None) -> DocumentFrequency:
        return DocumentFrequency(self.df, self.n_units, source or f"fork-pickle:{self.sha256[:16]}:{self.n_units}")


def _check(obj, path: str, sha: str) -> ForkDf:
    if not isinstance(obj, dict) or "document_frequency" not in obj or "ref_len" not in obj:
        got = sorted(map(repr, obj))[:5] if isinstance(obj, dict) else type(obj).__name__
        raise InputError(f"{path}: not a CIDEr df pickle; expected a dict with 'document_frequency' and "
                         f"'ref_len', got {got}")
    extra = [k for k in obj if k not in ("document_frequency", "ref_len")]
    if extra:
        raise InputError(f"{path}: unexpected key {extra[0]!r} beside 'document_frequency' and 'ref_len'")
    ref_len, raw = obj["ref_len"], obj["document_frequency"]
    # The limits --cider-df applies to n_units (capeval.dffile): a file converted here is one it
    # reads. Compared as numbers, never converted first: float(10**400) overflows.
    if isinstance(ref_len, bool) or not isinstance(ref_len, (int, float)) \
            or (isinstance(ref_len, float) and not math.isfinite(ref_len)) \
            or not 2 <= ref_len <= MAX_EXACT_INT or ref_len != int(ref_len):
        shown = (f"an integer of {len(str(ref_len))} digits" if isinstance(ref_len, int) and ref_len > 10 ** 30
                 else f"{ref_len!r:.80}")
        raise InputError(f"{path}: 'ref_len' (the number of reference sets the df was counted over) must be a "
                         f"whole number >= 2 and <= 2**53 (as --cider-df reads n_units), got {shown}")
    n_units = int(ref_len)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: 'document_frequency' must be a dict of n-gram tuples -> counts, "
                         f"got {type(raw).__name__}")
    if isinstance(raw, collections.defaultdict) and raw.default_factory not in (None, float, int):
        raise InputError(f"{path}: 'document_frequency' is a defaultdict of {raw.default_factory!r}; expected float")
    df: dict[str, float] = {}
    skipped = 0
    for gram, v in raw.items():
        if not isinstance(gram, tuple) or not all(isinstance(w, str) for w in gram):
            raise InputError(f"{path}: n-gram key {gram!r:.80} is not a tuple of strings")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= n_units:
            raise InputError(f"{path}: df of n-gram {gram!r:.80} is {v!r}; it must be a count between 0 and "
                             f"ref_len ({n_units})")
        # The fork looks n-grams up as tuples of str.split() words, 1 to 4 of them: a key of any
        # other shape can never be found, so leaving it out changes no score.
        if not 1 <= len(gram) <= N_ORDER or any(not w or w.split() != [w] for w in gram):
            skipped += 1
            continue
        df[" ".join(gram)] = float(v)
    return ForkDf(df, n_units, skipped, sha)


def read_fork_df(path: str | Path, *, allow_pickle: bool = False) -> ForkDf:
    """The fork's df pickle at ``path``, read by the restricted unpickler; with ``allow_pickle``,
    by Python's own (after a warning saying what that risks)."""
    path = Path(path)
    data = read_regular(path, "CIDEr df pickle", MAX_PICKLE_BYTES)
    sha = hashlib.sha256(data).hexdigest()
    # Before anything is unpickled, even a trusted file: nesting (a 200,000-deep tuple key
    # crashes the interpreter when it is hashed), strings counted per reference, integer sizes.
    prescan_pickle(data, str(path))
    if allow_pickle:
        warnings.warn(f"allow_pickle=True: loading {path} with pickle; {PICKLE_RISK}", UserWarning,
                      stacklevel=user_stacklevel())
        loader = pickle.Unpickler(io.BytesIO(data), encoding="latin1")
    else:
        loader = _RestrictedUnpickler(io.BytesIO(data), str(path))
    try:
        obj = loader.load()
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{path}: the pickle nests objects too deeply to be read") from None
    except Exception as e:  # noqa: BLE001 - a truncated or foreign file: the unpickler's own error, named
        raise InputError(f"{path}: not a readable pickle ({type(e).__name__}: {e})") from None
    return _check(obj, str(path), sha)


def convert_fork_df(src: str | Path, dest: str | Path) -> dict:
    """Write the fork's df pickle ``src`` as a capeval df file ``dest`` (restricted reading only).
    Returns what was converted: n-grams written and left out, ``n_units``, the output's sha256."""
    fork = read_fork_df(src)
    sha = DocumentFrequency(fork.df, fork.n_units, "").save(dest)
    return {"ngrams": len(fork.df), "skipped": fork.skipped, "n_units": fork.n_units, "sha256": sha,
            "source_sha256": fork.sha256}
