"""benchmarks/long_captions.py in --quick mode on tiny sizes: the results file's structure, both
sides' numbers equal where pycocoevalcap runs too, and the rendered block of docs/PERFORMANCE.md
(its timings are not checked: they are timings)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._needs import MINILM

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "long_captions.py"
CELL_KEYS = {"seconds", "cpu_seconds", "peak_rss_delta_mib", "rss_before_mib", "rows", "words", "candidate_words",
             "process_seconds", "load_average_after"}


@pytest.mark.needs("data", "java", "module:pycocoevalcap", "extra:bertscore", MINILM)
def test_quick_run_writes_every_cell_and_renders(tmp_path):
    out = tmp_path / "long.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--lengths", "10,50", "--families",
                           "tokenizer,rouge_l,bertscore", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["quick"] is True and got["lengths"] == [10, 50] and got["tokenizer"] == "ptb-batch"
    assert set(got["families"]) == {"tokenizer", "rouge_l", "bertscore"}
    assert {"clip_s", "pac_s", "clair"} <= set(got["not_run"])
    assert got["unlisted_families"] == []  # every registered family is run or said why not
    assert {"cpus", "python", "pycocoevalcap", "java"} <= set(got["machine"])
    cells = got["cells"]
    assert set(cells["tokenizer"]) == set(cells["rouge_l"]) == {"capeval", "pycocoevalcap"}
    assert set(cells["bertscore"]) == {"capeval"}
    for family, sides in cells.items():
        for side, by_length in sides.items():
            assert set(by_length) == {"10", "50"}
            for length, cell in by_length.items():
                assert "error" not in cell, (family, side, length, cell.get("error"))
                assert CELL_KEYS <= set(cell), (family, side, length)
                assert cell["rows"] >= 2 and cell["words"] > cell["candidate_words"] > 0
                # whole sentences: a row is within one caption's length of its target
                assert abs(cell["candidate_words"] / cell["rows"] - int(length)) <= 25
                if side == "pycocoevalcap":
                    assert {"tokenizer_seconds", "jvm_peak_rss_mib"} <= set(cell)
    rouge = cells["rouge_l"]["capeval"]["50"]
    assert set(rouge["corpus"]) == {"rouge_l"} and rouge["signatures"]["rouge_l"].startswith("rouge_l_coco|")
    assert cells["bertscore"]["capeval"]["10"]["encoded_tokens_per_token"] >= 1.0
    summary = got["summary"]
    assert summary["agree"] == {"tokenizer": {"10": True, "50": True}, "rouge_l": {"10": True, "50": True}}
    assert set(summary["ratio_vs_pycocoevalcap"]) == {"tokenizer", "rouge_l"}
    assert set(summary["per_word_us"]) == {"tokenizer", "tokenizer (pycocoevalcap)", "rouge_l",
                                           "rouge_l (pycocoevalcap)", "bertscore"}
    assert {"not_flat", "ngram_ratio_300_vs_10", "spice_words_per_second"} <= set(summary["targets"])

    doc = tmp_path / "PERF.md"
    doc.write_text("# P\n\nbefore\n<!-- long-captions:begin -->\nold table\n<!-- long-captions:end -->\nafter\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--render", str(out), "--doc", str(doc)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    text = doc.read_text()
    assert "old table" not in text and text.startswith("# P\n\nbefore\n") and text.endswith("\nafter\n")
    assert "| rouge_l | " in text and "| tokenizer (pycocoevalcap) | " in text and "Not run:" in text
