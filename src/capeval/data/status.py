"""What ``capeval data list`` shows: per benchmark, presence, row counts and checksum state."""
from __future__ import annotations

from pathlib import Path

from ..paths import data_root
from ..errors import CapevalError, ResourceNotFound
from .checksums import check_folder
from .records import CorrelationTable, DatasetInfo, PairwiseTable, SystemTable
from .registry import specs


def table_counts(table) -> dict[str, int]:
    if isinstance(table, CorrelationTable):
        return {"rows": len(table), "groups": len(set(table.groups))}
    if isinstance(table, PairwiseTable):
        return {"rows": len(table), "categories": len(set(table.categories))}
    if isinstance(table, SystemTable):
        return {"rows": len(table) * len(table.systems), "images": len(table), "systems": len(table.systems)}
    return {}


def dataset_infos(root: Path | str | None = None, *, verify: bool = False, count: bool = True) -> list[DatasetInfo]:
    """``verify`` hashes every file (about 1 s for the team data); otherwise presence only."""
    from .loading import load_table

    root = Path(root) if root is not None else data_root()
    hashes: dict[str, str] = {}
    out = []
    for spec in specs():
        info = DatasetInfo(spec.name, spec.kind, spec.folder, present=False, description=spec.description)
        if root is None:
            info.checksum = "no data root"
            out.append(info)
            continue
        checks = [check_folder(root, f, hash_files=verify, _cache=hashes) for f in (spec.folder, *spec.needs)]
        bad = [f"{c.folder}: {c.status}" for c in checks if c.status != "ok"]
        info.checksum = ("ok" if verify else "present") if not bad else "; ".join(bad)
        if count and not spec.costly:
            try:
                # through load(): a file of an unexpected shape is a named load error, not a traceback
                table = load_table(spec.name, root)
                info.counts = table_counts(table)
                info.protocol = dict(table.protocol)
                info.present = True
            except ResourceNotFound:
                info.present = False
            except CapevalError as exc:
                info.present = True
                info.checksum += f"; load error: {exc}"
        else:
            info.present = all(not c.missing for c in checks)
        out.append(info)
    return out
