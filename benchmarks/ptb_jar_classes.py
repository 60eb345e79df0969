"""The character classes of CoreNLP 3.4.1's PTB lexer, read off the jar, written as
src/capeval/text/_ptb_jar_classes.py.

    python benchmarks/ptb_jar_classes.py [--check]

JFlex compiled the lexer's ``[:letter:]`` and ``[:digit:]`` from the Unicode tables of the JDK
that built the jar (Unicode 6.x), not from the JVM that runs it: letters added since are
untokenizable for the jar, and code points whose category changed since keep their old class.
Python's ``str.isalpha`` follows Python's own Unicode version (14.0 in 3.11, 15.1 in 3.13), so
the emulation takes the jar's classes from this table instead. Every BMP code point but the
surrogates and the jar's line breaks is run through the jar in three contexts that isolate
one class each:

- ``-c`` is one token exactly when ``c`` is a ``[:digit:]`` (a signed number);
- ``1c`` is one token exactly when ``c`` is a ``[:letter:]`` or a digit (``THING``);
- ``xc`` is one token exactly when ``c`` is a word character: a letter, a digit or one of the
  grammar's extra word characters (``WORD``), which ``--check`` compares with
  ``_ptb_lexer._LETTER_EXTRA``.

Characters above U+FFFF are two UTF-16 code units to the jar, neither of them a letter, so the
table covers the BMP only. Needs Java and pycocoevalcap's jar.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "src" / "capeval" / "text" / "_ptb_jar_classes.py"
JAR_LINE_BREAKS = frozenset("\n\r\x0b\x0c\u2028\u2029")


def code_points() -> list[str]:
    return [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in JAR_LINE_BREAKS]


def jar_lines(lines: list[str]) -> list[str]:
    """The jar's raw output lines (tokens before the wrapper's filter) for ``lines``."""
    import os
    import subprocess
    import tempfile

    from capeval.resources import resolver
    from capeval.text.ptb_java import command

    jar = str(resolver.resolve("ptb-jar", None))
    fd, path = tempfile.mkstemp(suffix=".txt")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write("\n".join(lines).encode("utf-8"))
        proc = subprocess.run(command(jar, path), capture_output=True, check=True)
    finally:
        os.remove(path)
    out = proc.stdout.decode("utf-8").split("\n")
    if len(out) != len(lines):
        raise SystemExit(f"the jar returned {len(out)} lines for {len(lines)}")
    return out


def ranges(chars: list[str]) -> str:
    """A regex class body (``\\uXXXX`` escapes, ``a-b`` ranges) holding exactly ``chars``."""
    cps = sorted(map(ord, chars))
    out = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        a, b = cps[i], cps[j]
        out.append(f"\\u{a:04X}" if a == b else f"\\u{a:04X}-\\u{b:04X}")
        i = j + 1
    return "".join(out)


def _literal(body: str, width: int = 96) -> str:
    """``body`` as a parenthesised run of string literals, cut between ranges."""
    pieces = re.findall(r"\\u[0-9A-F]{4}(?:-\\u[0-9A-F]{4})?", body)
    lines, cur = [], ""
    for p in pieces:
        if len(cur) + len(p) > width:
            lines.append(cur)
            cur = ""
        cur += p
    lines.append(cur)
    return "(\n" + "".join(f'    "{x}"\n' for x in lines) + ")"


def measure() -> tuple[list[str], list[str], list[str]]:
    """(digits, letters, word characters) as the jar lexes them."""
    cps = code_points()
    contexts = ("-{}", "1{}", "x{}")
    out = jar_lines([ctx.format(c) for c in cps for ctx in contexts])
    digits, letters, word = [], [], []
    for k, c in enumerate(cps):
        minus, one, x = out[3 * k: 3 * k + 3]
        if minus.strip() == f"-{c}" and c != "-":  # "--" is a dash token
            digits.append(c)
        if " " not in one.strip() and one.startswith("1") and len(one.strip()) > 1:
            letters.append(c)
        if " " not in x.strip() and x.startswith("x") and len(x.strip()) > 1:
            word.append(c)
    letters = [c for c in letters if c not in set(digits)]
    return digits, letters, word


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="Compare the jar with the shipped table and the grammar's extra word characters; write nothing.")
    a = ap.parse_args(argv)
    digits, letters, word = measure()
    if a.check:
        from capeval.text import _ptb_jar_classes, _ptb_lexer

        shipped_l = re.compile(f"[{_ptb_jar_classes.LETTERS}]")
        shipped_d = re.compile(f"[{_ptb_jar_classes.DIGITS}]")
        extra = re.compile(f"[{_ptb_lexer._LETTER_EXTRA}]")
        # "x." is an initial and "x\u00ad" loses its soft hyphen: neither context shows the class
        bad = [c for c in code_points() if c not in ".\u00ad"
               and ((shipped_l.match(c) is not None) != (c in set(letters))
               or (shipped_d.match(c) is not None) != (c in set(digits))
               or (c in set(word)) != (c in set(letters) or c in set(digits) or extra.match(c) is not None))]
        print(f"{len(letters)} letters, {len(digits)} digits; {len(bad)} code points differ from the table: "
              + " ".join(f"U+{ord(c):04X}" for c in bad[:40]))
        return 1 if bad else 0
    OUT.write_text(
        '"""CoreNLP 3.4.1\'s ``[:letter:]`` and ``[:digit:]`` over the BMP, as the jar lexes them\n'
        "(generated by benchmarks/ptb_jar_classes.py; regex class bodies).\"\"\"\n\n"
        f"LETTERS = {_literal(ranges(letters))}\n\nDIGITS = {_literal(ranges(digits))}\n",
        encoding="utf-8",
    )
    print(f"{len(letters)} letters, {len(digits)} digits -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
