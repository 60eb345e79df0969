"""The published side of benchmarks/seed_tables.py: the seed papers' tables as machine-readable
values, read from the team's transcription (shared/docs/PUBLISHED_SEED_TABLES.md).

    python benchmarks/seed_published.py [--md PATH]   # rewrites benchmarks/published_seed_tables.json

The JSON is committed, so the generator runs without the shared docs; the test
tests/benchmarks/test_seed_tables.py re-reads the Markdown (when present) and checks that every
stored value is the printed one.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_MD = REPO.parent / "shared" / "docs" / "PUBLISHED_SEED_TABLES.md"
JSON_PATH = HERE / "published_seed_tables.json"

#: paper file stem -> citation used in the generated tables
PAPERS = {
    "kilickaya2017_reevaluating": "Kilickaya et al. (EACL 2017)",
    "nneval_sharif2018": "Sharif et al., NNEval (ECCV 2018)",
    "qace_lee2021": "Lee et al., QACE (2021)",
    "wembsim_sharif": "Sharif et al., WEmbSim (DICTA 2020)",
    "pregen_tanti2018": "Tanti et al., pre-gen metrics (2018)",
}

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def cell_value(text: str) -> float | None:
    """A printed cell as a number: ``0.47*`` -> 0.47 (the mark is kept by :func:`cell_mark`),
    ``1,000`` -> 1000; None for text cells."""
    t = text.strip().rstrip("*").replace(",", "")
    if t.lower().startswith("total:"):
        t = t.split(":", 1)[1].strip()
    return float(t) if _NUMBER.match(t) else None


def cell_mark(text: str) -> str:
    return "*" if text.strip().endswith("*") else ""


def parse_markdown(text: str) -> dict[str, dict]:
    """Every numeric table of the transcription: ``"<paper>/<Table N>"`` -> header and rows.

    A table belongs to the nearest ``## <paper>.txt`` and ``### Table N`` headings above it; only
    the first Markdown table after a ``### Table`` heading is that table.
    """
    out: dict[str, dict] = {}
    paper = table = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^## (\S+)\.txt\b", line)
        if m:
            paper, table = m.group(1), None
        m = re.match(r"^### (Table [IVX\d]+)\b", line)
        if m:
            table = m.group(1)
        key = f"{paper}/{table}"
        if line.startswith("|") and paper and table and key not in out:
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = []
            i += 2  # skip the |---| line
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            out[key] = {"paper": paper, "table": table, "header": header, "rows": rows}
            continue
        i += 1
    return out


def to_json(tables: dict[str, dict]) -> dict:
    """Rows as ``{label: {column: value}}`` (numbers; a ``*`` mark kept under ``marks``)."""
    out = {}
    for key, t in tables.items():
        rows: dict[str, dict] = {}
        marks: dict[str, dict] = {}
        parent = ""
        for r in t["rows"]:
            # "↳ F1" rows are parts of the row above them (QACE-Ref, QACE-Img): name the parent.
            label = f"{parent} {r[0]}" if r[0].startswith("↳") else r[0]
            parent = parent if r[0].startswith("↳") else r[0]
            vals = {}
            for col, cell in zip(t["header"][1:], r[1:]):
                v = cell_value(cell)
                if v is not None:
                    vals[col] = v
                    if cell_mark(cell):
                        marks.setdefault(label, {})[col] = cell_mark(cell)
            if vals:
                rows[label] = vals
        if rows:
            entry = {"paper": PAPERS.get(t["paper"], t["paper"]), "table": t["table"],
                     "columns": t["header"][1:], "rows": rows}
            if marks:
                entry["marks"] = marks
            out[key] = entry
    return out


#: Numbers the papers state in prose, not in a table (PUBLISHED_SEED_TABLES.md "Related numeric
#: claims"): Kilickaya §3.4, the WMD+SPICE+METEOR combination against SPICE alone (Spearman).
CLAIMS = {
    "kilickaya2017_reevaluating/Sec. 3.4": {
        "paper": PAPERS["kilickaya2017_reevaluating"], "table": "Sec. 3.4",
        "columns": ["F8K Spearman", "COMPOSITE Spearman"],
        "rows": {"WMD+SPICE+METEOR": {"F8K Spearman": 0.66, "COMPOSITE Spearman": 0.45},
                 "SPICE": {"F8K Spearman": 0.64, "COMPOSITE Spearman": 0.42}},
    },
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md", type=Path, default=DEFAULT_MD)
    ap.add_argument("--out", type=Path, default=JSON_PATH)
    args = ap.parse_args(argv)
    if not args.md.is_file():
        print(f"{args.md} not found; pass --md", file=sys.stderr)
        return 2
    tables = to_json(parse_markdown(args.md.read_text(encoding="utf-8")))
    doc = {"source": "shared/docs/PUBLISHED_SEED_TABLES.md (values as printed in the seed papers)",
           "command": "python benchmarks/seed_published.py", "tables": tables, "claims": CLAIMS}
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {len(tables)} tables", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
