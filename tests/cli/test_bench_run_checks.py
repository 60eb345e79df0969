"""``capeval bench``: line breaks in published files, and the checks made before any scoring."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capeval import extras
from capeval.cli.main import app
from tests.data.modern_fixtures import pin_fixtures, pinned_root

runner = CliRunner()
FILE = "nebula/nebula_test.json"


@pytest.fixture
def root(tmp_path, monkeypatch):
    return pinned_root(tmp_path, monkeypatch, "nebula")


def _with_breaks(root, monkeypatch):
    """The fixture with what the published Nebula file holds: a reference ending in ``\\n``."""
    items = json.loads((root / FILE).read_text())
    items[2]["refs"][4] += " in the image.\n"
    items[0]["mt"] = "a dog\r\nruns on the grass"
    (root / FILE).write_text(json.dumps(items, indent=1))
    pin_fixtures(monkeypatch, root)  # the published file is the pinned one


def test_bench_reads_line_breaks_as_spaces_and_says_so(root, monkeypatch, tmp_path):
    _with_breaks(root, monkeypatch)
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["bench", "nebula", "-m", "bleu4", "-q", "--root", str(root), "--json", str(out)])
    assert res.exit_code == 0, res.output
    sig = json.loads(out.read_text())["_signatures"]["benchmark"]
    assert "|breaks:space:2|" in sig


def test_strict_line_breaks_refuses_naming_the_flag_that_was_passed(root, monkeypatch):
    _with_breaks(root, monkeypatch)
    res = runner.invoke(app, ["bench", "nebula", "-m", "bleu4", "-q", "--root", str(root), "--strict-line-breaks"])
    assert res.exit_code == 2
    flat = " ".join(res.output.split())
    assert "nebula: candidate of row 0 (group 'nebula_0001') contains a line break (\\r)" in flat
    assert "2 text(s) of nebula hold one" in flat and "Strict mode (--strict-line-breaks" in flat
    assert "Traceback" not in res.output


def test_no_message_tells_a_user_to_drop_a_flag():
    """The strict-mode messages name the option that was set; none says to drop or go without one."""
    from capeval.errors import InputError
    from capeval.validation import check_text

    with pytest.raises(InputError) as e:
        check_text("a\nb", "candidate 0", line_breaks="refuse")
    text = str(e.value)
    assert "Strict mode (line_breaks='refuse'; command line: --strict-line-breaks)" in text
    assert "Drop" not in text and "without --" not in text


def _no_matplotlib(monkeypatch, *more):
    real = extras._importable
    monkeypatch.setattr(extras, "_importable", lambda m: m not in ("matplotlib", *more) and real(m))


def _refuse_scoring(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("scored although the run could not complete")

    monkeypatch.setattr("capeval.metaeval.runner.run_benchmark", fail)


def test_report_without_matplotlib_is_refused_before_scoring(root, monkeypatch, tmp_path):
    _no_matplotlib(monkeypatch)
    _refuse_scoring(monkeypatch)
    md, html = tmp_path / "out.md", tmp_path / "r.html"
    args = ["bench", "nebula", "-m", "bleu4", "-q", "--root", str(root), "--markdown", str(md), "--report", str(html)]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    flat = " ".join(res.output.split())
    assert "--report (its figures) needs [report] (matplotlib missing)" in flat
    assert "pip install -e '.[report]'" in flat
    assert not md.exists() and not html.exists()


def test_every_missing_piece_is_named_at_once(root, monkeypatch, tmp_path):
    _no_matplotlib(monkeypatch, "transformers")
    _refuse_scoring(monkeypatch)
    md = tmp_path / "out.md"
    md.write_text("earlier run\n")
    args = ["bench", "nebula,nope", "-m", "bleu4,bertscore_f,nometric", "-q", "--root", str(root),
            "--markdown", str(md), "--report", str(tmp_path / "r.html")]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    flat = " ".join(res.output.split())
    assert "this run cannot complete; nothing was scored or written (4 problems)" in flat
    assert "unknown benchmark 'nope'" in flat
    assert "nometric" in flat
    assert "bertscore_f needs [bertscore] (transformers missing); --report (its figures) needs [report]" in flat
    assert "pip install -e '.[bertscore,report]'" in flat  # one command for both
    assert "already exists" in flat and str(md) in flat
    assert md.read_text() == "earlier run\n" and not (tmp_path / "r.html").exists()


def test_unwritable_output_folder_is_refused_before_scoring(root, monkeypatch, tmp_path):
    import os

    _refuse_scoring(monkeypatch)
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    # a read-only folder, also for root (who may write anywhere and so cannot test chmod 0o500)
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p) == str(ro) else real(p, mode, **k))
    res = runner.invoke(app, ["bench", "nebula", "-m", "bleu4", "-q", "--root", str(root),
                              "--json", str(ro / "sub" / "r.json")])
    assert res.exit_code == 2 and f"{ro} is not writable" in " ".join(res.output.split())
    assert not (ro / "sub").exists()


def test_a_failure_while_writing_leaves_no_partial_outputs(root, monkeypatch, tmp_path):
    """A report that fails after scoring (here: its figures) leaves none of the run's files,
    so the same command can be run again without --overwrite."""
    from capeval.errors import ResourceNotFound

    def broken(*a, **k):
        raise ResourceNotFound("figures failed")

    monkeypatch.setattr("capeval.metaeval.report.build_report", broken)
    md, js, html = tmp_path / "out.md", tmp_path / "out.json", tmp_path / "r.html"
    args = ["bench", "nebula", "-m", "bleu4", "-q", "--root", str(root), "--markdown", str(md), "--json", str(js),
            "--report", str(html)]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "figures failed" in res.output
    assert not md.exists() and not js.exists() and not html.exists()
    monkeypatch.undo()
    root2 = pinned_root(tmp_path / "again", monkeypatch, "nebula")
    args[6] = str(root2)
    res = runner.invoke(app, args[:-2])
    assert res.exit_code == 0, res.output
    assert md.exists() and js.exists()
