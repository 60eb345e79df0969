"""The run folder's file format: a JSON document and numpy arrays, never a pickle.

A value is written as one JSON text whose non-JSON parts are tagged lists, followed by the
``.npy`` bytes of its arrays (``allow_pickle=False`` both ways, so an object array cannot be
written and a file cannot hold one). Tags: ``["l", items]`` a list, ``["t", items]`` a tuple,
``["f", items]`` a frozenset, ``["s", items]`` a set, ``["d", [[key, value], ...]]`` a dict
whose keys are not all strings (a dict with string keys is a JSON object), ``["a", i]`` the
i-th array, ``["u", [strings], shape]`` an array of Python strings, ``["n", dtype, value]`` a
numpy scalar, ``["b", base64]`` bytes, ``["x", "nan" | "inf" | "-inf"]`` a float JSON cannot
spell, ``["o", "module:qualname", state]`` an object.

Objects are rebuilt without running their constructor (``cls.__new__`` and their state set as
``copy`` and pickle set it) and only when the reader allows the class (:func:`decode`'s
``allowed``), found in a module already imported: a file never names a module to import nor a
callable to call. A value this format cannot hold (an object array, a class without a state
dictionary) is :class:`Unstorable`.
"""
from __future__ import annotations

import base64
import io
import json
import math
import struct
import sys
import types
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import numpy as np

_HEAD = struct.Struct("<Q")


class Unstorable(ValueError):
    """A value the run folder's format cannot hold."""


def class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@dataclass(frozen=True)
class Allowed:
    """The classes a value may hold objects of: ``classes``, or subclasses of ``bases``
    (``bases=(object,)``: any class, for a value that is hashed and never read back)."""

    classes: frozenset[type] = frozenset()
    bases: tuple[type, ...] = ()

    def __call__(self, cls: type) -> bool:
        return cls in self.classes or (bool(self.bases) and issubclass(cls, self.bases))


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return ["x", "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")]


def _state(obj) -> Any:
    getstate = getattr(type(obj), "__getstate__", None)
    if getstate is not None and getstate is not object.__getstate__:
        return obj.__getstate__()
    try:
        return dict(vars(obj))
    except TypeError:
        raise Unstorable(f"a {type(obj).__name__} has no state dictionary") from None


def _enc(x: Any, arrays: list[np.ndarray], depth: int, allowed: Callable[[type], bool]) -> Any:
    if depth > 48:
        raise Unstorable("nested too deep")
    d = depth + 1
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.generic):
        if x.dtype.kind not in "biuf":
            raise Unstorable(f"numpy scalar of dtype {x.dtype}")
        v = x.item()
        return ["n", x.dtype.str, _float(v) if isinstance(v, float) else v]
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return _float(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "O":
            flat = x.ravel().tolist()
            if not all(isinstance(s, str) for s in flat):
                raise Unstorable("an array of Python objects other than strings")
            return ["u", flat, list(x.shape)]
        arrays.append(x)
        return ["a", len(arrays) - 1]
    if isinstance(x, (bytes, bytearray)):
        return ["b", base64.b64encode(bytes(x)).decode("ascii")]
    if type(x) is dict:
        if all(type(k) is str for k in x):
            return {k: _enc(v, arrays, d, allowed) for k, v in x.items()}
        return ["d", [[_enc(k, arrays, d, allowed), _enc(v, arrays, d, allowed)] for k, v in x.items()]]
    if type(x) is list:
        return ["l", [_enc(v, arrays, d, allowed) for v in x]]
    if type(x) is tuple:
        return ["t", [_enc(v, arrays, d, allowed) for v in x]]
    if type(x) in (set, frozenset):
        return ["f" if type(x) is frozenset else "s", [_enc(v, arrays, d, allowed) for v in sorted(x, key=repr)]]
    if isinstance(x, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)):
        raise Unstorable(f"a {type(x).__name__}")
    if not allowed(type(x)):
        raise Unstorable(f"an object of class {class_name(type(x))}, which this file may not hold")
    return ["o", class_name(type(x)), _enc(_state(x), arrays, d, allowed)]


def encode(obj: Any, allowed: Callable[[type], bool]) -> bytes:
    """``obj`` as bytes of this format, or :class:`Unstorable` (also for an object whose class
    ``allowed`` refuses: what could not be read back is not written)."""
    arrays: list[np.ndarray] = []
    doc = _enc(obj, arrays, 0, allowed)
    blobs = []
    for a in arrays:
        buf = io.BytesIO()
        try:
            np.save(buf, a, allow_pickle=False)
        except ValueError as e:
            raise Unstorable(str(e)) from None
        blobs.append(buf.getvalue())
    # ASCII escapes: a lone surrogate (which capeval.score takes as text) has no UTF-8 form
    text = json.dumps({"v": doc, "arrays": [len(b) for b in blobs]}, ensure_ascii=True,
                      allow_nan=False, separators=(",", ":")).encode("ascii")
    return _HEAD.pack(len(text)) + text + b"".join(blobs)


def _lookup(name: str, allowed: Callable[[type], bool]) -> type:
    module, _, qual = name.partition(":")
    obj: Any = sys.modules.get(module)  # never imported on a file's word
    for part in qual.split("."):
        if obj is None or part.startswith("<"):
            break
        obj = getattr(obj, part, None)
    if not isinstance(obj, type) or not allowed(obj):
        raise Unstorable(f"class {name}, which this file may not hold")
    return obj


def _build(cls: type, state: Any) -> Any:
    obj = cls.__new__(cls)  # type: ignore[call-overload]
    if hasattr(cls, "__setstate__"):
        obj.__setstate__(state)
    elif isinstance(state, dict) and all(type(k) is str for k in state):
        obj.__dict__.update(state)
    else:
        raise Unstorable(f"state of {class_name(cls)}")
    return obj


def _dec(x: Any, arrays: list[np.ndarray], allowed: Callable[[type], bool]) -> Any:
    if isinstance(x, dict):
        return {k: _dec(v, arrays, allowed) for k, v in x.items()}
    if not isinstance(x, list):
        return x
    tag, *rest = x
    if tag in ("l", "t", "f", "s"):
        items = [_dec(v, arrays, allowed) for v in rest[0]]
        return {"l": list, "t": tuple, "f": frozenset, "s": set}[tag](items)
    if tag == "d":
        return {_dec(k, arrays, allowed): _dec(v, arrays, allowed) for k, v in rest[0]}
    if tag == "a":
        return arrays[rest[0]]
    if tag == "u":
        out = np.empty(len(rest[0]), dtype=object)
        out[:] = rest[0]
        return out.reshape(rest[1])
    if tag == "n":
        dt = np.dtype(rest[0])
        if dt.kind not in "biuf":
            raise Unstorable(f"numpy scalar of dtype {dt}")
        v = rest[1]
        return dt.type(_dec(v, arrays, allowed) if isinstance(v, list) else v)
    if tag == "b":
        return base64.b64decode(rest[0], validate=True)
    if tag == "x":
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[rest[0]]
    if tag == "o":
        return _build(_lookup(rest[0], allowed), _dec(rest[1], arrays, allowed))
    raise Unstorable(f"unknown tag {tag!r}")


def decode(data: bytes, allowed: Callable[[type], bool]) -> Any:
    """The value :func:`encode` wrote; objects only of classes ``allowed`` accepts. Any damage
    is :class:`Unstorable` (never a pickle, so nothing in the bytes runs)."""
    try:
        (n,) = _HEAD.unpack_from(data)
        head = json.loads(data[_HEAD.size:_HEAD.size + n].decode("utf-8"))
        pos = _HEAD.size + n
        arrays = []
        for size in head["arrays"]:
            if not isinstance(size, int) or size < 0 or pos + size > len(data):
                raise Unstorable("array outside the file")
            arrays.append(np.load(io.BytesIO(data[pos:pos + size]), allow_pickle=False))
            pos += size
        if pos != len(data):
            raise Unstorable("bytes after the last array")
        return _dec(head["v"], arrays, allowed)
    except Unstorable:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, struct.error, EOFError, OSError,
            RecursionError, UnicodeDecodeError) as e:
        raise Unstorable(f"damaged ({type(e).__name__}: {e})") from None


__all__ = ["Unstorable", "class_name", "decode", "encode"]
