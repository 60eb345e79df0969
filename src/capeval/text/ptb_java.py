"""pycocoevalcap's PTB tokenization through the real CoreNLP 3.4.1 jar, with the checks it lacks.

Same pipeline as ``pycocoevalcap/tokenizer/ptbtokenizer.py`` (docs/TOKENIZER.md): captions
joined with ``\\n`` into a UTF-8 file, ``java -cp stanford-corenlp-3.4.1.jar
edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase <file>``, output line *k* for
caption *k*, each line right-stripped, split on single spaces, the 17 punctuation tokens dropped.

The wrapper replaces only ``\\n`` by a space; the jar also ends a line at ``\\r``, VT, FF, U+2028
and U+2029 and would silently shift every later caption (docs/TOKENIZER.md, Known differences). Here those
become spaces (``line_breaks="space"``, default; == the wrapper for ``\\n``; U+001C-1E and NEL,
which the jar reads inside the line, are passed on), or the caption is refused
(``line_breaks="refuse"``, every character of ``validation.LINE_BREAKS``), and exactly one output
line must come back per caption.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence

from ..errors import ExternalToolError, ResourceNotFound
from ..resources import resolver
from ..validation import check_line_break_policy, check_text
from .ptb import PUNCTUATIONS

MAIN_CLASS = "edu.stanford.nlp.process.PTBTokenizer"
FLAGS = ("-preserveLines", "-lowerCase")
DEFAULT_TIMEOUT_S = 600.0


def command(jar: str, input_path: str, java: str | None = None) -> list[str]:
    """The jar invocation pycocoevalcap uses (with explicit paths instead of its cwd trick)."""
    return [java or resolver.java_executable(), "-cp", jar, MAIN_CLASS, *FLAGS, input_path]


def _check(captions: Sequence[str], line_breaks: str) -> list[str]:
    # Empty captions are fine for the jar (one empty output line); line breaks become spaces
    # or are refused, never reach the jar.
    return [
        check_text(cap, f"caption {i}", allow_empty=True, line_breaks=line_breaks)
        for i, cap in enumerate(captions)
    ]


def _filter(line: str) -> str:
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)


def tokenize(
    captions: Sequence[str],
    *,
    jar: str | os.PathLike | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    line_breaks: str = "space",
) -> list[str]:
    """Tokenize with the CoreNLP jar; one output per caption, in order.

    ``jar`` overrides the resource lookup (``$CAPEVAL_PTB_JAR``, then pycocoevalcap's copy).
    Line-break characters are read as spaces (``line_breaks="space"``) or refused
    (``"refuse"``). Raises :class:`InputError` for a refused caption (naming it),
    :class:`ResourceNotFound` when Java or the jar is missing, and :class:`ExternalToolError`
    when Java fails, times out, or returns a different number of lines.
    """
    check_line_break_policy(line_breaks)
    captions = _check(list(captions), line_breaks)
    if not captions:
        return []
    jar_path = str(resolver.resolve("ptb-jar", jar))
    java = resolver.java_executable()
    # _check has turned every line break into a space (the wrapper does so for "\n" only).
    text = "\n".join(captions)
    fd, path = tempfile.mkstemp(prefix="capeval-ptb-", suffix=".txt")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        cmd = command(jar_path, path, java)
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except FileNotFoundError as e:
            raise ResourceNotFound(
                f"could not start Java ({java}): {e}. Install a JRE >= 8 or set CAPEVAL_JAVA."
            ) from e
        except subprocess.TimeoutExpired as e:
            raise ExternalToolError(
                f"PTB tokenizer timed out after {timeout} s on {len(captions)} captions "
                f"(command: {' '.join(cmd)})"
            ) from e
    finally:
        os.remove(path)
    stderr = proc.stderr.decode("utf-8", errors="replace").strip()
    if proc.returncode != 0:
        raise ExternalToolError(
            f"PTB tokenizer failed with exit code {proc.returncode} (command: {' '.join(cmd)}).\n"
            f"stderr:\n{stderr[-4000:]}"
        )
    lines = proc.stdout.decode("utf-8").split("\n")
    if len(lines) != len(captions):
        raise ExternalToolError(
            f"PTB tokenizer returned {len(lines)} lines for {len(captions)} captions; refusing to "
            f"misalign them.\nstderr:\n{stderr[-2000:]}"
        )
    return [_filter(line) for line in lines]
