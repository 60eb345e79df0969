"""Fault injection on output paths that are not regular files (issue 28, item 15): a device
node or a FIFO named as an output is refused, ``--overwrite`` included, and left as it was.
Device nodes are made with ``mknod`` inside a temporary folder, never touched in /dev."""
from __future__ import annotations

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from capeval.errors import OutputError
from capeval.outputs import atomic_write, check_outputs, special_file


def _fifo(tmp_path):
    p = tmp_path / "fifo.json"  # a known suffix: the refusal must come from what the file is
    os.mkfifo(p)
    return p


def _chardev(tmp_path):
    p = tmp_path / "null.json"
    try:
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"mknod not permitted here ({e})")
    return p


MAKERS = {"fifo": _fifo, "character device": _chardev}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_api_writes_refuse_special_files(tmp_path, kind):
    p = MAKERS[kind](tmp_path)
    before = os.lstat(p)
    with pytest.raises(OutputError, match="writes only regular files"):
        atomic_write(p, "x")
    with pytest.raises(OutputError, match="writes only regular files"):
        check_outputs([p], overwrite=True)
    after = os.lstat(p)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_score_cli_never_replaces_a_special_file(tmp_path, kind):
    from capeval.cli.main import app

    p = MAKERS[kind](tmp_path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "candidate": "a dog", "references": ["a dog runs"]}) + "\n"
                    + json.dumps({"id": "b", "candidate": "two cats", "references": ["two cats sleep"]}) + "\n")
    res = CliRunner().invoke(app, ["score", "--input", str(rows), "-m", "bleu4", "-o", str(p), "--overwrite", "-q"])
    assert res.exit_code == 2, res.output
    assert "regular files" in res.output
    assert special_file(p) is not None


def test_regular_files_and_links_are_not_special(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    (tmp_path / "l").symlink_to(f)
    assert special_file(f) is None and special_file(tmp_path / "l") is None
    assert special_file(tmp_path / "missing") is None
