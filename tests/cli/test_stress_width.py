"""``capeval stress`` in an 80-column terminal (issue 40, item 7): Rich lays out and wraps at the
terminal's width (it once pre-wrapped at 140, so a real terminal broke words), metric columns
that do not fit go to a further table instead of being cut, and the elapsed time on stderr says
what it is."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

from typer.testing import CliRunner

from capeval.stress.report import legend
from tests._needs import SPICE_PY, requires

ROWS = [
    {"id": "r1", "candidate": "A man riding a horse on a beach .", "references": ["a person rides a horse by the sea"]},
    {"id": "r2", "candidate": "Two dogs are playing in the green grass .", "references": ["two dogs play on a lawn"]},
    {"id": "r3", "candidate": "A red bus parked next to a building .", "references": ["a red bus near a building"]},
]
METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]


@requires(*SPICE_PY)
def test_stress_fits_80_columns_without_cutting_a_word(tmp_path):
    from capeval.cli.main import app

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "s.json"
    res = CliRunner().invoke(app, ["stress", "--input", str(rows), "-m", ",".join(METRICS), "--bootstrap", "20",
                                   "--json", str(out)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    doc = json.loads(out.read_text())
    signature = doc["signature"]
    assert lines[-1] == signature  # one line, copied whole: the only line allowed past 80 (it has no space)
    assert all(len(line) <= 80 for line in lines[:-1]), max(lines[:-1], key=len)
    assert "…" not in res.stdout  # no header or cell cut short
    headers = [cell.strip() for line in lines if line.startswith("┃") for cell in line.strip("┃").split("┃")]
    assert [h for h in headers if h in METRICS] == METRICS  # every metric, whole, in order
    assert sum(line.startswith("┏") for line in lines) >= 2  # six metrics: more than one table at 80 columns
    first = next(i for i, line in enumerate(lines) if line.startswith("Accuracy (%)"))
    # Rich wrapped between words only: a word cut in two would be two words here
    assert " ".join(lines[first:-1]).split() == legend(SimpleNamespace(items=ROWS)).split()
    assert re.fullmatch(r"stress: 3 items scored in \d+\.\d s", res.stderr.strip().splitlines()[-1]), res.stderr
