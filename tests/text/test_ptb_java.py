"""The jar-backed tokenizer: the jar's input/output table (tests/text/_ptb_cases.py), line-break
refusal, the line-count and failure checks (with a stand-in ``java``), and a clear error when Java is missing."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from capeval.errors import ExternalToolError, InputError, ResourceNotFound
from capeval.text import ptb_java
from capeval.validation import LINE_BREAKS

from ._ptb_cases import TABLE


@pytest.mark.oracle
@pytest.mark.java
def test_protocol_table(java):
    texts = [t for t, _ in TABLE]
    assert ptb_java.tokenize(texts) == [want for _, want in TABLE]


@pytest.mark.oracle
@pytest.mark.java
def test_empty_captions_keep_their_lines(java):
    assert ptb_java.tokenize(["", "A dog.", "", " "]) == ["", "a dog", "", ""]


def test_no_captions_needs_no_java():
    assert ptb_java.tokenize([]) == []


@pytest.mark.parametrize("ch", sorted(LINE_BREAKS), ids=[LINE_BREAKS[c] for c in sorted(LINE_BREAKS)])
def test_strict_mode_refuses_line_breaks_naming_the_item(ch):
    with pytest.raises(InputError, match=r"caption 1 contains a line break"):
        ptb_java.tokenize(["fine", f"first{ch}second", "also fine"], line_breaks="refuse")


@pytest.mark.oracle
@pytest.mark.java
def test_line_breaks_read_as_spaces_shift_nothing(java):
    # The jar itself splits at \r, VT, FF, U+2028/9 (docs/TOKENIZER.md); here no caption moves.
    texts = [t for ch in sorted(LINE_BREAKS) for t in (f"A man{ch}rides a horse.", "a dog")]
    assert ptb_java.tokenize(texts) == ["a man rides a horse", "a dog"] * len(LINE_BREAKS)


def test_refuses_non_strings():
    with pytest.raises(InputError, match="caption 0"):
        ptb_java.tokenize([b"bytes"])


def _fake_java(tmp_path, body: str) -> str:
    """An executable standing in for ``java``: ``body`` is Python run with the jar's arguments."""
    path = tmp_path / "java"
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def fake_jar(tmp_path, monkeypatch):
    jar = tmp_path / "stanford-corenlp-3.4.1.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv("CAPEVAL_PTB_JAR", str(jar))
    return jar


def test_line_count_mismatch_is_an_error(tmp_path, monkeypatch, fake_jar):
    # Prints every line of the input file but the last: as if a caption had been split/lost.
    java = _fake_java(tmp_path, "lines = open(sys.argv[-1], encoding='utf-8').read().split('\\n')\n"
                      "print('\\n'.join(lines[:-1]), end='')")
    monkeypatch.setenv("CAPEVAL_JAVA", java)
    with pytest.raises(ExternalToolError, match="returned 2 lines for 3 captions"):
        ptb_java.tokenize(["a", "b", "c"])


def test_passes_the_wrapper_flags_and_filters_output(tmp_path, monkeypatch, fake_jar):
    java = _fake_java(
        tmp_path,
        "assert sys.argv[1:5] == ['-cp', sys.argv[2], 'edu.stanford.nlp.process.PTBTokenizer', "
        "'-preserveLines'] and sys.argv[5] == '-lowerCase', sys.argv\n"
        "print(open(sys.argv[-1], encoding='utf-8').read().upper(), end='')",
    )
    monkeypatch.setenv("CAPEVAL_JAVA", java)
    # Output tokens equal to a filter entry are dropped: "." and "-LRB-" (after the fake's upper-casing).
    assert ptb_java.tokenize(["a . b", "-lrb- x"]) == ["A B", "X"]


def test_failure_surfaces_stderr(tmp_path, monkeypatch, fake_jar):
    java = _fake_java(tmp_path, "sys.stderr.write('Error: could not find main class'); sys.exit(1)")
    monkeypatch.setenv("CAPEVAL_JAVA", java)
    with pytest.raises(ExternalToolError, match="could not find main class"):
        ptb_java.tokenize(["a"])


def test_timeout(tmp_path, monkeypatch, fake_jar):
    java = _fake_java(tmp_path, "time.sleep(30)")
    monkeypatch.setenv("CAPEVAL_JAVA", java)
    with pytest.raises(ExternalToolError, match="timed out"):
        ptb_java.tokenize(["a"], timeout=0.5)


def test_missing_java_is_named(monkeypatch, fake_jar):
    monkeypatch.delenv("CAPEVAL_JAVA", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ResourceNotFound, match="Java was not found"):
        ptb_java.tokenize(["a"])


def test_missing_jar_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("CAPEVAL_PTB_JAR", os.fspath(tmp_path / "nope.jar"))
    with pytest.raises(ResourceNotFound, match="ptb-jar"):
        ptb_java.tokenize(["a"])
