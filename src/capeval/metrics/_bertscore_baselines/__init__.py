"""BERTScore rescale baselines that capeval computed, and their reader and writer.

A baseline file is bert_score's table (``LAYER,P,R,F``, one row per layer from 0 = embedding
output; bert_score names these files ``.tsv`` although they are comma-separated) preceded by
``# key: value`` provenance lines: what text, how many pairs, which seed, which weights, which
script. ``benchmarks/compute_bertscore_baseline.py`` writes them. bert_score's own reader
does not skip comments: strip the ``#`` lines to use one there as ``baseline_path``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError, ResourceNotFound

BASELINE_DIR = Path(__file__).parent


@dataclass(frozen=True)
class Baseline:
    """Per-layer P, R, F baselines (rows 0..n_layers, float32) and their provenance."""

    id: str
    values: np.ndarray
    meta: dict[str, str] = field(default_factory=dict)
    path: str = ""

    def row(self, layer: int) -> np.ndarray:
        if not 0 <= layer < len(self.values):
            raise InputError(
                f"rescale baseline {self.id} ({self.path}) has layers 0..{len(self.values) - 1}, "
                f"not {layer}"
            )
        return self.values[layer]


def baseline_filename(model_name: str) -> str:
    return model_name.replace("/", "__") + ".tsv"


def read_baseline(path: str | Path) -> Baseline:
    """Read a bert_score-format baseline, with or without ``# key: value`` header lines.

    The id is the header's ``id`` or, for a file without one, ``file:`` + its SHA-256 prefix.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResourceNotFound(f"cannot read rescale baseline {path}: {exc}") from None
    meta: dict[str, str] = {}
    rows: list[list[float]] = []
    header_seen = False
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                meta[key.strip()] = value.strip()
            continue
        cells = [c.strip() for c in line.replace("\t", ",").split(",")]
        if not header_seen:
            if [c.upper() for c in cells[1:]] != ["P", "R", "F"]:
                raise InputError(f"{path}:{n}: expected the header LAYER,P,R,F, got {line!r}")
            header_seen = True
            continue
        try:
            layer = int(cells[0])
            vals = [float(c) for c in cells[1:]]
        except ValueError:
            raise InputError(f"{path}:{n}: not a LAYER,P,R,F row: {line!r}") from None
        if layer != len(rows) or len(vals) != 3:
            raise InputError(f"{path}:{n}: expected layer {len(rows)} with 3 values, got {line!r}")
        rows.append(vals)
    if not rows:
        raise InputError(f"{path}: no baseline rows")
    bid = meta.get("id") or "file:" + hashlib.sha256(raw).hexdigest()[:12]
    return Baseline(bid, np.asarray(rows, dtype=np.float32), meta, str(path))


def format_table(values: np.ndarray) -> list[str]:
    """bert_score's table; each value the shortest string that reads back to the same float32."""
    values = np.asarray(values, dtype=np.float32)
    return ["LAYER,P,R,F"] + [
        f"{i}," + ",".join(np.format_float_positional(v, unique=True, trim="-") for v in row)
        for i, row in enumerate(values)
    ]


def write_baseline(path: str | Path, values: np.ndarray, meta: dict[str, str], id_prefix: str) -> Baseline:
    """Write provenance lines then the table; the id is ``<id_prefix>:<hash of the table>``."""
    body = format_table(values)
    meta = {"id": f"{id_prefix}:{hashlib.sha256(chr(10).join(body).encode()).hexdigest()[:8]}", **meta}
    lines = [f"# {k}: {v}" for k, v in meta.items()] + body
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_baseline(path)


def packaged_baseline(model_name: str, revision: str) -> Baseline:
    """The baseline capeval computed for ``model_name``; refuses one made with other weights."""
    path = BASELINE_DIR / baseline_filename(model_name)
    if not path.is_file():
        have = sorted(p.stem.replace("__", "/") for p in BASELINE_DIR.glob("*.tsv"))
        raise ResourceNotFound(
            f"no rescale baseline for encoder {model_name!r} (capeval ships: "
            f"{', '.join(have) or 'none'}). Compute one with "
            "benchmarks/compute_bertscore_baseline.py --model <model> and pass baseline=<file>, "
            "or turn rescale_with_baseline off."
        )
    base = read_baseline(path)
    made_with = base.meta.get("model_revision")
    if made_with and made_with != revision:
        raise ResourceNotFound(
            f"the packaged rescale baseline for {model_name!r} ({path.name}) was computed with "
            f"weights {made_with}, but the loaded weights are {revision}. Compute a baseline for "
            "these weights with benchmarks/compute_bertscore_baseline.py and pass baseline=<file>."
        )
    return base
