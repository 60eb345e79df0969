"""Warnings on the command line name their category and message, not capeval's source lines."""
from __future__ import annotations

import subprocess
import sys
import warnings


def test_the_command_prints_a_warning_without_file_and_source_line(tmp_path):
    code = ("import warnings, sys\n"
            "from capeval.cli import _ending\n"
            "_ending.plain_warnings()\n"
            "class LongTextWarning(UserWarning): pass\n"
            "warnings.warn('bertscore: 1 text(s) cut [b]x', LongTextWarning)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stderr == "warning: LongTextWarning: bertscore: 1 text(s) cut [b]x\n"


def test_the_format_is_set_by_the_cli_only():
    # importing capeval (a user's program) keeps Python's own format
    import capeval  # noqa: F401

    line = warnings.formatwarning("m", UserWarning, "f.py", 3, "x = 1")
    assert line.startswith("f.py:3: UserWarning: m")
