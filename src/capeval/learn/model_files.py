"""Model files: ``.npz`` written byte-for-byte reproducibly, read with ``allow_pickle=False``.

``np.savez`` stamps each zip member with the current time, so the same weights saved twice
give different files and a checksum cannot prove a retrain reproduced them. This writer uses a
fixed timestamp, stored (uncompressed) members in sorted order and numpy's own ``.npy`` format,
so ``np.load`` reads the result like any ``.npz``. Metadata is one JSON string array (a
unicode array, not an object array), so no pickle is ever involved.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..digests import sha256_file
from ..errors import InputError, ResourceNotFound
from ..outputs import atomic_open

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip header can hold
META_KEY = "meta_json"


def save_npz(path: Path | str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """Write arrays + JSON metadata; return the file's sha256."""
    if META_KEY in arrays:
        raise InputError(f"array name {META_KEY!r} is reserved for the metadata")
    members = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in members.items():
        if v.dtype.hasobject:
            raise InputError(f"array {k!r} has dtype object; model files never hold pickled objects")
    members[META_KEY] = np.array(json.dumps(meta, sort_keys=True, ensure_ascii=True))
    path = Path(path)
    # atomic_open: on disk before the rename, so a crash never leaves a truncated model.
    with atomic_open(path, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name in sorted(members):
            buf = io.BytesIO()
            # np.ascontiguousarray would turn 0-d arrays (the metadata, a bias) into 1-d ones.
            np.lib.format.write_array(buf, np.array(members[name], order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())
    return sha256_file(path)


def load_npz(path: Path | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    from ..guards import MAX_PICKLE_BYTES, open_regular

    path = Path(path)
    if not os.path.lexists(path):  # lexists: a link loop or a device reaches the door, which names it
        raise ResourceNotFound(f"model file {path} not found")
    try:
        with open_regular(path, "model file", MAX_PICKLE_BYTES) as f, np.load(f, allow_pickle=False) as z:
            arrays = {k: np.array(z[k]) for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise InputError(f"{path} is not a readable capeval model (.npz without pickles): {e}") from None
    if META_KEY not in arrays:
        raise InputError(f"{path} has no {META_KEY!r} entry; not a capeval model file")
    from ..guards import loads_json

    meta = loads_json(str(arrays.pop(META_KEY)), f"{path}: metadata")  # the JSON door: depth, integers
    return arrays, meta


def save_model(path: Path | str, model: Any, fmt: str, arrays: Mapping[str, np.ndarray], **meta: Any) -> str:
    """A trained model's file: its ``arrays`` (the scaler's) and weights (``model.params``), and
    its metadata (``model.meta`` with the format, kind, tokenizer, ``meta`` and the features);
    returns the file's sha256."""
    from .features import label

    members = {**arrays, **{f"param_{i:02d}": p for i, p in enumerate(model.params)}}
    fields = dict(model.meta)
    fields.update(format=fmt, kind=model.kind, tokenizer=model.tokenizer, **meta,
                  features=[f.to_json() for f in model.features], feature_labels=[label(f) for f in model.features])
    return save_npz(path, members, fields)


def load_model(path: Path | str, fmt: str, build: Any) -> Any:
    """The model in the file ``path`` of format ``fmt``: ``build(arrays, meta, features, params)``
    with its ``sha256`` set; a missing entry is an error naming it."""
    from .features import Feature

    arrays, meta = load_npz(path)
    if meta.get("format") != fmt:
        raise InputError(f"{path}: format {meta.get('format')!r}, expected {fmt!r}")
    try:
        features = tuple(Feature.from_json(d) for d in meta["features"])
        params = [arrays[k] for k in sorted(arrays) if k.startswith("param_")]
        model = build(arrays, meta, features, params)
    except KeyError as e:
        raise InputError(f"{path}: missing entry {e}") from None
    model.sha256 = sha256_file(path)
    return model
