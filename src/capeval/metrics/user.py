"""Metrics a user brings: a :class:`UserMetric` subclass, or a plain Python callable.

A subclass names itself and its version and implements :meth:`UserMetric.score`; everything
else (the output description, the signature, score-cache keys) follows from those. A callable
``fn(candidates, references, images) -> one float per candidate`` is wrapped by
:func:`from_callable`. Both receive the raw (untokenized) text of a batch, and the images of
the call (file paths, or None when the call has none).

The same classes are what a plug-in distribution exposes through the ``capeval.metrics``
entry-point group (``capeval.metrics.registry``).
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from ..signature import signature_line
from .base import Metric, OutputInfo

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def check_name(name: str, what: str = "user metric name") -> str:
    """Metric names end up in tables, signatures (``|``-separated) and option keys."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InputError(f"{what} {name!r}: use letters, digits, '_', '.' or '-', starting with a letter")
    return name


class UserMetric(Metric):
    """Base of a metric defined outside capeval.

    Set ``name`` (the output name used in ``-m``, tables and signatures) and ``version`` (bump it
    whenever the numbers change: it is in the signature and in the score-cache key), optionally
    ``higher_is_better``, ``range`` and ``description``, and implement :meth:`score`. Set
    ``needs_images = True`` when the metric cannot run without images.

    >>> class Length(UserMetric):
    ...     name, version = "length", "1"
    ...     def score(self, candidates, references, images):
    ...         return [len(c.split()) for c in candidates]
    """

    name: ClassVar[str]
    version: ClassVar[str] = "0"
    higher_is_better: ClassVar[bool] = True
    range: ClassVar[tuple[float, float]] = (-math.inf, math.inf)
    description: ClassVar[str] = ""
    text_input = "raw"
    accepts_images = True

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        name = cls.__dict__.get("name")
        if name is None:  # an intermediate base class
            return
        check_name(name)
        cls.family = name
        cls.variant = f"user:{name}"
        if len(cls.range) != 2:
            raise InputError(f"user metric {name!r}: range must be (low, high), got {cls.range!r}")
        low, high = cls.range
        cls.outputs = (OutputInfo(name, name, cls.variant, (low, high), cls.higher_is_better,
                                  cls.description or f"user metric {name} (version {cls.version})"),)

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              images: Sequence[str] | None) -> Sequence[float]:
        """One number per candidate."""
        raise NotImplementedError

    def signature_fields(self) -> dict[str, object]:
        """Settings that change the numbers, beyond name and version (a subclass with options
        returns them here)."""
        return {}

    def compute(self, candidates, references, images=None) -> MetricScores:
        try:
            raw = self.score(list(candidates), [list(r) for r in references],
                             None if images is None else list(images))
        except (SystemExit, GeneratorExit) as e:  # user code must not end a run silently
            from .registry import third_party

            raise InputError(f"metric {self.name!r} ({third_party(self.family) or 'user metric'}) raised "
                             f"{type(e).__name__}({e}) while scoring; a metric returns its scores or raises an "
                             "exception") from None
        values = checked_scores(raw, len(candidates), self.name)
        return MetricScores(corpus={self.name: float(values.mean()) if len(values) else math.nan},
                            per_caption={self.name: values},
                            signature_fields={"mv": self.version, **self.signature_fields()})

    def signature(self, output: str, fields: dict, *, tok: str, nrefs: str) -> str:
        # The corpus value of a user metric is the mean of its per-caption numbers: say so.
        return signature_line(self.variant, out=output, tok=tok, nrefs=nrefs, corpus="mean", **fields)

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        return f"user-version:{cls.version}"


def checked_scores(values, n: int, name: str) -> np.ndarray:
    """A user metric's numbers as floats, one per candidate, all finite; else an error naming
    the first bad item. Only an ordered container of numbers is read: a list, a tuple, another
    sequence, or a one-dimensional array (numpy, or anything with ``__array__``, such as a torch
    tensor). A dict (whose iteration gives its keys), a set (hash order), a generator, a string
    or a scalar is refused, naming its type, rather than scored in some order."""
    if isinstance(values, (str, bytes, bytearray, Mapping, AbstractSet)) or not (
            isinstance(values, Sequence) or hasattr(values, "__array__")):
        raise InputError(f"user metric {name!r} returned a {type(values).__name__}; return a list, tuple or "
                         "1-D array of numbers, one per candidate, in the candidates' order")
    if not isinstance(values, Sequence):
        _check_positional(values, name)
        try:
            arr = np.asarray(values)
        except Exception as e:  # noqa: BLE001 - a foreign array type
            raise InputError(f"user metric {name!r} returned a {type(values).__name__} that is not readable as "
                             f"an array ({type(e).__name__}: {e})") from None
        if arr.ndim != 1:
            raise InputError(f"user metric {name!r} returned a {type(values).__name__} of shape {arr.shape}; "
                             "expected one dimension, one number per candidate")
        if arr.dtype.kind not in "iuf":
            raise InputError(f"user metric {name!r} returned a {type(values).__name__} of {arr.dtype}; "
                             "expected real numbers")
        values = arr.tolist()
    seq = list(values)
    if len(seq) != n:
        raise InputError(f"user metric {name!r} returned {len(seq)} scores for {n} candidates")
    out = np.empty(n, dtype=float)
    for i, v in enumerate(seq):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InputError(f"user metric {name!r}: score of candidate {i} is {v!r:.80} ({type(v).__name__}), "
                             "not a real number")
        try:
            out[i] = float(v)
        except OverflowError:
            out[i] = math.inf
        if not math.isfinite(out[i]):
            raise InputError(f"user metric {name!r}: score of candidate {i} is {v!r:.80}; scores must be finite")
    return out


def _check_positional(values, name: str) -> None:
    """A container with row labels (a pandas ``Series``) is read by position, as every other
    sequence is; that is only the candidates' order when its labels are 0..n-1 in order. A
    shuffled or sorted-by-score Series, or one labelled by ids, is refused rather than read out
    of order (capeval does not know what its labels mean)."""
    index = getattr(values, "index", None)
    if index is None or callable(index):  # a list's ``index`` is a method
        return
    try:
        labels = list(index)
    except Exception:  # noqa: BLE001 - a foreign container
        labels = None
    if labels is None or labels != list(range(len(labels))):
        shown = ", ".join(map(repr, (labels or [])[:4])) + (", ..." if labels and len(labels) > 4 else "")
        raise InputError(f"user metric {name!r} returned a {type(values).__name__} whose index is [{shown}], not "
                         "0..n-1 in order; its values would be read by position, not by label. Return "
                         "values in the candidates' order (e.g. series.sort_index().to_numpy() if the "
                         "labels are the candidates' positions)")


def from_callable(fn: Callable, name: str | None = None, *, higher_is_better: bool = True,
                  needs_images: bool = False) -> type[UserMetric]:
    """A :class:`UserMetric` class around ``fn(candidates, references, images)``.

    ``name`` defaults to the function's name. Nothing identifies a function's code across
    processes, so its numbers are never cached (``cacheable = False``) and its signature says
    ``mv:callable``; subclass :class:`UserMetric` with a ``version`` to get cached, versioned
    numbers."""
    if not callable(fn):
        raise InputError(f"{fn!r} is neither a metric name nor a callable")
    if name is None and getattr(fn, "__name__", "") == "<lambda>":
        raise InputError("a lambda has no name; wrap it with capeval.metrics.user.from_callable(fn, name=...)")
    name = check_name(name or str(getattr(fn, "__name__", "")), "callable metric name (pass name=...)")

    def score(self, candidates, references, images):
        return fn(candidates, references, images)

    return type(f"Callable_{name}", (UserMetric,), {
        "name": name, "version": "callable", "higher_is_better": higher_is_better,
        "needs_images": needs_images, "cacheable": False, "score": score, "__module__": __name__,
    })


def scores_metric(name: str, path, *, higher_is_better: bool = True) -> type[UserMetric]:
    """A metric that reads a user's scores file (``{"id", "score"}`` per unit id of ``capeval
    data export``) instead of computing: the Python form of ``capeval bench --scores``, and a
    way to give a learned metric a score from outside as a feature. A unit's id hashes its
    candidate, references and image file name, so the call must pass the images (paths whose
    file names are the benchmark's) whenever the export named them. A unit the file lacks is
    an error naming it."""
    import os

    from ..scorefile import read_scores, unit_id

    sf = read_scores(path)

    def score(self, candidates, references, images):
        names = [None] * len(candidates) if images is None else [os.path.basename(p) for p in images]
        ids = [unit_id(c, r, img) for c, r, img in zip(candidates, references, names)]
        missing = [(i, u) for i, u in enumerate(ids) if u not in sf.scores]
        if missing:
            i, u = missing[0]
            hint = "" if images is not None else " (no images were given; exported units name their image)"
            raise InputError(f"scores file {sf.path}: no score for candidate {i} ({candidates[i]!r}, unit id {u}); "
                             f"{len(missing)} unit(s) in all{hint}")
        return [sf.scores[u] for u in ids]

    return type(f"Scores_{name}", (UserMetric,), {
        "name": check_name(name), "version": f"sha256:{sf.sha256}", "higher_is_better": higher_is_better,
        "score": score, "__module__": __name__,
        "signature_fields": lambda self: {"file": f"sha256:{sf.sha256}"},
        "signature": lambda self, output, fields, *, tok, nrefs: signature_line(
            self.variant, out=output, file=f"sha256:{sf.sha256}", corpus="mean"),
    })


def as_metric_name(metric) -> str:
    """A name, a :class:`Metric` subclass or instance, or a callable → the output name to ask
    for; non-names are registered for this process (``registry.register_user``)."""
    from .registry import register_user

    if isinstance(metric, str):
        return metric
    cls = metric if isinstance(metric, type) else type(metric) if isinstance(metric, Metric) else None
    if cls is None:
        cls = from_callable(metric)
    if not issubclass(cls, Metric):
        raise InputError(f"{metric!r} is neither a metric name, a Metric subclass nor a callable")
    register_user(cls)
    names = cls.output_names()
    if len(names) != 1:
        raise InputError(f"metric family {cls.family!r} has outputs {names}; pass their names after registering it")
    return names[0]


def as_metric_names(metrics) -> list[str]:
    """:func:`as_metric_name` of each entry. Two different callables or classes that share a
    name (two functions both called ``score``) would register one over the other, and the run
    would report one of them under the name: refused, naming both."""
    names: list[str] = []
    seen: dict[str, object] = {}
    for m in metrics:
        name = as_metric_name(m)
        if not isinstance(m, str):
            ident = type(m) if isinstance(m, Metric) else m
            prev = seen.setdefault(name, ident)
            if prev is not ident:
                raise InputError(f"two metrics are named {name!r} ({prev!r} and {ident!r}); only one result "
                                 "could carry the name: give one another name (from_callable(fn, name=...) "
                                 "or a UserMetric's name)")
        names.append(name)
    return names
