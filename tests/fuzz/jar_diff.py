"""The differential fuzz against pycocoevalcap 1.2 and its jars (issue 36): row generators, one
batch compared token by token and score by score (METEOR too: ``==``, the JVM's ``Math.pow``
included, from native METEOR's generated table), and the JVM's ``Math.pow``. Used by tests/fuzz/test_vs_jar.py (a fixed CI slice and
the deep Hypothesis search) and benchmarks/fuzz_vs_jar.py (the long run); the benchmark's
docstring describes the comparison.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import random
import struct
import subprocess
import tempfile
import warnings
from pathlib import Path

FAMILIES = ("bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "meteor")

# --- generators --------------------------------------------------------------------------------

#: Issue 36's alphabet. No generator here holds \r, VT, FF, U+2028 or U+2029: pycocoevalcap's
#: wrapper lets the jar split a caption there and misalign the batch (docs/TOKENIZER.md, Known
#: differences). NEL and U+001C-1E, which the jar reads inside the line, are fair game.
HOSTILE = list("abcdefghij  -.,'\"!?()[]{}/\\:;") + [
    "é", "ß", "İ", "ﬁ", "\u0301", "\u200b", "😀", "中", "\t", "’", "…", "n't", "'s", "...", "--",
    "``", "''", "0", "12", "3.5", "a.b", "U.S.", "Mr.",
]


def hostile_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HOSTILE) for _ in range(n)).strip() or "x"


def hostile_row(rng: random.Random) -> tuple[str, list[str]]:
    """One row of the issue's generator (``random.seed(1)`` + 400 of these reproduce it)."""
    c = hostile_text(rng, rng.choice([1, 3, 10, 40, 200]))
    refs = [hostile_text(rng, rng.choice([1, 5, 30, 120])) for _ in range(rng.randint(1, 6))]
    return c, refs


def issue_rows(seed: int = 1, n: int = 400) -> list[tuple[str, list[str]]]:
    """The rows of issue 36's generator, exactly (it draws from the module-level ``random``)."""
    state = random.getstate()
    random.seed(seed)
    try:
        return [hostile_row(random) for _ in range(n)]  # type: ignore[arg-type]
    finally:
        random.setstate(state)


WORDS = (
    "a an the man woman dog cat two people boy girl child standing sitting riding running holding "
    "red blue white black young little group field water grass street table bike horse ball beach "
    "snow car bus train sign shirt hat next to on in of with near is are at by over under while "
    "his her their its some many large small old new front side road building tree sky bird"
).split()
SENTENCE_WORDS = (
    "The A An He She It They This That These There In At As After But If We You Mr. Ms. Some "
    "One Our So Such Then When While What Yet How Who Why Did Two"
).split()
SPECIAL = {
    "abbreviation": (
        "Mr. Mrs. Ms. Dr. Drs. St. Jr. Sr. etc. Inc. Co. Corp. Ltd. Jan. Feb. Sept. Mon. Ave. vs. "
        "Prof. Gen. Mt. Ft. Calif. Mass. Ark. Tex. Pa. Pty. Mfg. al. Bros. Ph.D. Esq. Blvd. Rd. "
        "no. No. nos. fig. figs. ca. pp. op. art. prop. e.g. i.e. a.k.a. cf. Cie. Messrs. Sgt."
    ).split(),
    "acronym": "U.S. U.K. U.S.A. D.C. N.Y. B.C. A. I. e. x. b. Z. a.b a.b. p.m. A.M. U.S".split(),
    "number": (
        "3.5 .5 1,000 3:30 -5 +5 1.2.3.4 12 2 0 5-6 20-year-old 1/2 ½ ¼ 1990s '90s ’90s 2.c 7.30 "
        "x.jpg file.txt 10% 3x 2nd 1st 12-5-2010 ٣ ¹²"
    ).split() + ["5 1/2", "12 345 6789", "(555) 123-4567", "555-1234", "555.123.4567"],
    "contraction": (
        "don't can't won't it's I'm they're we've I'll he'd gonna cannot gotta wanna gimme lemme "
        "'tis 'twas y'all o'clock O'Neil ma'am dunno ain't dog's dogs' don’t it’s rock'n'roll "
        "'n' ’n’ cont'd c'mon li'l l'amour d'Arc Dunkin' somethin' 'em 'til 'cause n't 's 'll "
        "ol' nor'easter e'er ev'ry o'o"
    ).split(),
    "quote": ['"', "“", "”", "'", "‘", "’", "``", "''", "«", "»", "„", "‚", "‹", "›", "&quot;", "&apos;", "`"],
    "bracket": ["(", ")", "[", "]", "{", "}", "-LRB-", "-RRB-", "-lcb-"],
    # Not NEL (U+0085): capeval reads it as a line break, i.e. a space, the jar as "..." (docs/TOKENIZER.md)
    "ellipsis": ["...", "…", ". . .", "....", ".....", "......", ". .", ".."],
    "dash": ["-", "--", "---", "----", "-----", "—", "–", "―", "‐", "-_-", "&mdash;", "&ndash;"],
    "symbol": (
        "& &amp; @ #tag # #1 $ US$ £5 €3 ¢ ¥ % * ** / \\ :) ;-) =D :P :( ^_^ <b> </b> <br/> &lt; "
        "&gt; &nbsp; &eacute; c++ C# f# at&t AT&T S&P-500 www.x.com http://a.b/c https://x.org/a?b=1 "
        "a@b.com <a@b.com> @home = + ~ | ¦ § © ° ± × ÷ • † ‰ ™ → ∞ ∑ ﬁ İ ß é ø 中 😀 \u0301 \u200b \u00ad"
    ).split(),
}
CATEGORIES = list(SPECIAL)
SEPARATORS = [" "] * 12 + ["", "  ", "\t", "\u00a0", " \u200b", "\u3000", "\x1c", " \x85 "]
ENDINGS = ["", ".", ".", ".", " .", "!", "?", "..", "...", ". ", ".\"", "\".", ").", ".)", ",", ";", ":"]


def grammar_caption(rng: random.Random) -> str:
    parts: list[str] = []
    if rng.random() < 0.5:
        parts.append(rng.choice(SENTENCE_WORDS))
    for _ in range(rng.choice([1, 2, 3, 5, 8, 12, 20])):
        if rng.random() < 0.6:
            w = rng.choice(WORDS)
            parts.append(w.capitalize() if rng.random() < 0.1 else w.upper() if rng.random() < 0.03 else w)
        else:
            parts.append(rng.choice(SPECIAL[rng.choice(CATEGORIES)]))
        if rng.random() < 0.08:  # a sentence break inside the caption
            parts[-1] += rng.choice([".", "!", "?"])
            parts.append(rng.choice(SENTENCE_WORDS))
    r = rng.random()
    if r < 0.15:  # end on a one-letter word or an initial: the period's fate depends on what follows
        parts.append(rng.choice("aAbBeIxZ"))
    elif r < 0.3:
        parts.append(rng.choice(SPECIAL["abbreviation"] + SPECIAL["acronym"] + SPECIAL["number"]))
    text = parts[0]
    for p in parts[1:]:
        text += rng.choice(SEPARATORS) + p
    text += rng.choice(ENDINGS)
    return text if text.strip() else "x"


def grammar_row(rng: random.Random) -> tuple[str, list[str]]:
    return grammar_caption(rng), [grammar_caption(rng) for _ in range(rng.randint(1, 6))]


#: Everything at once, densely: the special pieces, words, punctuation and the caseless
#: look-alikes of ASCII letters (İ ı ſ and the Kelvin sign), glued or spaced at random.
DENSE = (
    [p for pieces in SPECIAL.values() for p in pieces] + WORDS[:30] + SENTENCE_WORDS
    + list("abcxyzABCXYZ0123456789.,;:!?'\"-()[]{}/\\&@#$%*+=<>_~^|`")
    + ["é", "ß", "\u0301", "\u0130", "\u0131", "\u017f", "\u212a", "\u00a0", "\t", " ", "  ",
       "中", "ﬁ", "’", "‘", "“", "”", "…", "\x1c", "\x1d", "\x1e", "\x85",
       # the capital sigma, whose lower case depends on its word (Java's rule, not Python's)
       "Σ", "ΟΔΟΣ", "ΑΣ", "Α", "ʰ", "ˆ", "ͅ", "Ⅻ", "²"]
)


def dense_caption(rng: random.Random) -> str:
    k = rng.choice([1, 2, 3, 5, 8, 15, 30])
    text = "".join(rng.choice(DENSE) + (rng.choice(["", " ", " ", "\u00a0"]) if rng.random() < 0.6 else "")
                   for _ in range(k))
    return text.strip() or "x"


def dense_row(rng: random.Random) -> tuple[str, list[str]]:
    return dense_caption(rng), [dense_caption(rng) for _ in range(rng.randint(1, 6))]


# --- every code point, entities in any case, odd URLs, long captions ----------------------------

#: The line breaks the jar ends a line at (misaligning pycocoevalcap's batch), which no
#: generator emits.
JAR_LINE_BREAKS = frozenset("\r\x0b\x0c\u2028\u2029\n")
#: Code points worth drawing more often than their share: those whose general category changed
#: since the jar's Unicode tables, the line breaks only Python splits at, case look-alikes, the
#: capital sigma, marks, format characters, currency, fractions, quotes.
NOTABLE = (
    "\x1c\x1d\x1e\x1f\x85\x7f\x00\u00ad\u0130\u0131\u017f\u212a\u03a3\u03c2\u0345\u02b0\u02c6\u0301"
    "\u200b\u200c\u200d\u200e\u2060\ufeff\u00a0\u3000\u2007\u00a2\u00a3\u20ac\u20b9\u00bd\u2153\u215e"
    "\u2018\u2019\u201a\u201c\u201d\u201e\u00ab\u00bb\u2039\u203a\u0091\u0092\u0093\u0094\u0096\u0097"
    "\u2026\u2013\u2014\u0589\u061f\u06d4\u3002\u066b\u066c\u07c0\u0964\u0e3f\ufffd\ua7b5\u1f88"
    "\u0294\u02ec\u02ee\u0374\u037a\u0559\u0640\u07fa\u0e46\u0ec6\u1843\u1c78\u2071\u209c\u2c7d\u3031"
    "\u309d\u30fc\ua015\ua67f\uff70\uff9e\u2160\u216f\u24b6\u24d0\u2135\u00aa\u00ba"
)


def any_code_point(rng: random.Random) -> str:
    """A code point from anywhere: notable ones, the BMP, the other planes (no surrogate, no
    line break the jar splits at)."""
    r = rng.random()
    if r < 0.3:
        return rng.choice(NOTABLE)
    while True:
        cp = rng.randrange(0x20, 0x10000) if r < 0.85 else rng.randrange(0x10000, 0x30000)
        ch = chr(cp)
        if not 0xD800 <= cp <= 0xDFFF and ch not in JAR_LINE_BREAKS:
            return ch


#: Contexts a code point is put in: inside and around words and numbers, after a period (before
#: a sentence word), inside URLs, e-mail addresses, tags, entities, clitics and abbreviations.
CONTEXTS = [
    "{c}", "a{c}b", "{c}{c}", "1{c}2", "x.{c}", "{c}.", "A{c}.", "a {c} b", "{c}'s", "don{c}t",
    "http://{c}", "http://a{c}b", "https://x.org/{c}", "www.{c}.com", "www.a.b/{c}", "{c}.com", "a@{c}.com",
    "<{c}>", "<a {c}>", "&amp;{c}", "{c}&amp;", "U.S.{c}", "Mr.{c}", "no.{c}5", "{c}-{c}", "#{c}", "@{c}",
    "{C}Σ", "Σ{c}Α", "ΑΣ{c}", "{c}ΑΣ", "5{c}1/2", "12{c}345 6789", ":{c})", "{c}...", "'{c}", "\"{c}\"",
]


def codepoint_caption(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice([1, 2, 3, 6])):
        ctx = rng.choice(CONTEXTS)
        parts.append(ctx.replace("{c}", any_code_point(rng)).replace("{C}", any_code_point(rng)))
        if rng.random() < 0.3:
            parts.append(rng.choice(WORDS + SENTENCE_WORDS))
    text = rng.choice([" ", "", "  "]).join(parts)
    return text if text.strip() else "x"


def codepoint_row(rng: random.Random) -> tuple[str, list[str]]:
    return codepoint_caption(rng), [codepoint_caption(rng) for _ in range(rng.randint(1, 6))]


ENTITY_NAMES = ["amp", "quot", "apos", "lt", "gt", "nbsp", "mdash", "ndash", "md", "eacute", "Aacute", "uuml",
                "igrave", "ht", "qc", "odq", "#39", "#8217", "copy", "amp"]


def entity(rng: random.Random) -> str:
    name = rng.choice(ENTITY_NAMES)
    r = rng.random()
    name = name.upper() if r < 0.35 else name.capitalize() if r < 0.55 else \
        "".join(c.upper() if rng.random() < 0.5 else c for c in name) if r < 0.7 else name
    return f"&{name};" if rng.random() < 0.9 else f"&{name}"


ENTITY_CONTEXTS = ["{e}", "x {e} y", "AT{e}T", "at{e}t", "{e}s", "{e}S", "don{e}t", "DON{e}T", "{e}x", "x{e}",
                   "S{e}P-500", "s{e}ls", "<a{e}b>", "{e}lt;x@y.com{e}", "{e}{e}", "A{e}B{e}C", "it{e}s", "{e}90s",
                   "rock {e}n{e} roll", "I{e}m", "cap{e}n", "{e}tis", "a {e}b{e} c", "Q&A{e}", "{e}."]


def entity_caption(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice([1, 2, 4, 8])):
        parts.append("".join(entity(rng) if p == "" else p for p in _split_e(rng.choice(ENTITY_CONTEXTS))))
        if rng.random() < 0.4:
            parts.append(rng.choice(WORDS))
    return " ".join(parts) + rng.choice(ENDINGS)


def _split_e(template: str) -> list[str]:
    # "{e}" slots as empty strings between the literal pieces
    out: list[str] = []
    for i, piece in enumerate(template.split("{e}")):
        if i:
            out.append("")
        if piece:
            out.append(piece)
    return out


def entity_row(rng: random.Random) -> tuple[str, list[str]]:
    return entity_caption(rng), [entity_caption(rng) for _ in range(rng.randint(1, 6))]


URL_ODD = list("./-_~:;?!,=&%#@+$*'`\"()[]{}<>|^\\") + ["\u00a0", "\u200b", "\x1c", "\x85", "é", "Σ", "中",
                                                        "😀", "\U00010400", "&amp;", "&quot;", "…", "’", "0", "42"]


def url_caption(rng: random.Random) -> str:
    def run(k: int) -> str:
        return "".join(rng.choice(URL_ODD) if rng.random() < 0.35 else rng.choice("abcxyzOMW019")
                       for _ in range(k))
    head = rng.choice(["http://", "https://", "HTTP://", "Https://", "ftp://", "www.", "WWW.", "", "a.b.", "x@"])
    tail = rng.choice(["", ".com", ".org", ".net", ".edu", ".co.uk", ".html", ".jpg", "/", ".", ",", ")", "!"])
    url = head + run(rng.choice([0, 1, 2, 4, 8, 16])) + rng.choice(["", ".", "/", ".com/", "/.", "./"]) + \
        run(rng.choice([0, 2, 5, 10])) + tail
    words = [rng.choice(WORDS) for _ in range(rng.choice([0, 2, 5]))]
    words.insert(rng.randint(0, len(words)), url)
    return " ".join(words) + rng.choice(ENDINGS)


def url_row(rng: random.Random) -> tuple[str, list[str]]:
    return url_caption(rng), [url_caption(rng) for _ in range(rng.randint(1, 6))]


#: What ends a sentence in the long captions: plain words, abbreviations, acronyms, initials,
#: numbers (decimals, thousands, ordinals, times, fractions, phone numbers) and quoted or
#: bracketed ends.
SENTENCE_ENDS = (
    SPECIAL["abbreviation"] + SPECIAL["acronym"] + SPECIAL["number"]
    + ["3.", "10", "2.5", "1,000", "1990", "4:30", "no. 7", "p.m", "a.m.", "vs", "etc", "Fig. 2", "x", "I", "A"]
)


def long_caption(rng: random.Random) -> str:
    """A detailed description of 100-500 words: sentences of 5-30 words, many ending on an
    abbreviation, an initial or a number, the next one starting with a sentence word."""
    target = rng.randint(100, 500)
    sentences: list[str] = []
    n = 0
    while n < target:
        k = max(1, min(rng.randint(5, 30), 500 - n))
        words = [rng.choice(SENTENCE_WORDS)]
        for _ in range(k - 1):
            if rng.random() < 0.85:
                words.append(rng.choice(WORDS))
            else:
                words.append(rng.choice(SPECIAL[rng.choice(CATEGORIES)]))
        if rng.random() < 0.5:
            words.append(rng.choice(SENTENCE_ENDS))
        end = rng.choice([".", ".", ".", "!", "?", "", ".\"", ").", ";", "..."])
        sentences.append(" ".join(words) + end)
        n += len(words)
    return rng.choice([" ", " ", "  ", "\n"]).join(sentences)


def long_row(rng: random.Random) -> tuple[str, list[str]]:
    return long_caption(rng), [long_caption(rng) for _ in range(rng.randint(1, 5))]


GENERATORS = {"hostile": hostile_row, "grammar": grammar_row, "dense": dense_row, "codepoint": codepoint_row,
              "entity": entity_row, "url": url_row, "long": long_row}
#: Rows of each generator in the CI slice (tests/fuzz/test_vs_jar.py); the long captions cost
#: about 40 times a short row.
CI_ROWS = {"hostile": 700, "grammar": 700, "dense": 700, "codepoint": 500, "entity": 300, "url": 300, "long": 40}


# --- every code point -------------------------------------------------------------------------

#: The contexts of the code-point sweep: alone, inside and after words and numbers, as a digit
#: of a signed number, before a period and a sentence word, inside URLs, e-mail addresses and
#: entities, before a clitic, after a capital sigma.
SWEEP_CONTEXTS = ["{c}", "x{c}x", "1{c}1", "-{c}", "{c}a.", "a{c}", "A{c}. The x", "http://{c}", "www.a{c}.com",
                  "a@b{c}", "&amp;{c}", "{c}'s", "\u0391\u03a3{c}", "12{c}345 6789"]


def sweep_code_points(step: int = 1, contexts: list[str] = SWEEP_CONTEXTS) -> list[str]:
    """Every ``step``-th code point of the BMP (no surrogate, no line break the jar splits at)
    and of the first astral planes, in every context: one caption each."""
    cps = [c for c in range(0, 0x10000, step) if not 0xD800 <= c <= 0xDFFF and chr(c) not in JAR_LINE_BREAKS]
    cps += list(range(0x10000, 0x30000, 97 * step))
    return [ctx.replace("{c}", chr(c)) for c in cps for ctx in contexts]


def compare_tokens(texts: list[str], report: dict, label: str) -> None:
    """The jar (through pycocoevalcap's wrapper, one batch) against ``ptb.tokenize_lines``,
    caption by caption; tokens only."""
    from capeval.text import ptb
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    with quiet():
        jar = PTBTokenizer().tokenize({i: [{"caption": t}] for i, t in enumerate(texts)})
    mine = ptb.tokenize_lines(texts)
    for i, t in enumerate(texts):
        report["captions"] += 1
        report["tokens"] += len(jar[i][0].split())
        if jar[i][0] != mine[i]:
            if _jvm_case_only(jar[i][0], mine[i]):
                report["jvm_case"] = report.get("jvm_case", 0) + 1
                _example(report, "jvm_case", {"batch": label, "text": t, "jar": jar[i][0], "capeval": mine[i]})
                continue
            report["token_differences"] += 1
            _example(report, "token", {"batch": label, "text": t, "jar": jar[i][0], "capeval": mine[i]})


def _jvm_case_only(jar: str, mine: str) -> bool:
    """The strings differ only by capitals the JVM's Unicode tables do not lower-case yet
    (letters after Unicode 13 for Java 17, inside URL- and e-mail-like tokens: docs/TOKENIZER.md,
    Known differences)."""
    return len(jar) == len(mine) and all(a == b or (a.lower() == b and a.upper() == a) for a, b in zip(jar, mine))


# --- the reference side ------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """Silence pycocoevalcap's prints and the jar's stderr (its "Untokenizable" warnings)."""
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def reference_scores(gts: dict, res: dict, meteor, report: dict) -> dict[str, tuple[float, list[float]]]:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    out: dict[str, tuple[float, list[float]]] = {}
    b, bs = Bleu(4).compute_score(gts, res)
    for n in range(4):
        out[f"bleu{n + 1}"] = (b[n], list(bs[n]))
    s, ss = Rouge().compute_score(gts, res)
    out["rouge_l"] = (s, list(ss))
    if any(t for refs in gts.values() for t in refs):
        s, ss = Cider().compute_score(gts, res)
        out["cider_d"] = (s, list(ss))
    else:
        # pycocoevalcap's Cider fails on a set with no reference token (max() of an empty df);
        # there is nothing to compare capeval's zeros with (docs/METRICS.md)
        report["reference_failures"] += 1
    s, ss = meteor.compute_score(gts, res)
    out["meteor"] = (s, list(ss))
    return out


_POW_SOURCE = """
import java.io.*;
public class JvmPow {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            double x = Double.longBitsToDouble(Long.parseUnsignedLong(line.trim(), 16));
            out.append(Long.toHexString(Double.doubleToRawLongBits(Math.pow(x, 0.2)))).append('\\n');
        }
        System.out.print(out);
    }
}
"""


def jvm_pow(xs: list[float]) -> dict[float, float] | None:
    """``Math.pow(x, 0.2)`` as the JVM computes it (the source launcher needs a JDK); None when
    it cannot run."""
    if not xs:
        return {}
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "JvmPow.java"
        src.write_text(_POW_SOURCE)
        data = "".join(f"{int.from_bytes(_bits(x), 'big'):016x}\n" for x in xs)
        try:
            p = subprocess.run(["java", str(src)], check=False, input=data, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if p.returncode != 0:
        return None
    return {x: _from_bits(int(h, 16)) for x, h in zip(xs, p.stdout.split())}


def _bits(x: float) -> bytes:
    return struct.pack(">d", x)


def _from_bits(b: int) -> float:
    return struct.unpack(">d", b.to_bytes(8, "big"))[0]


def _frag(row: list[float]) -> float:
    # MeteorScorer.computeMetrics' fragmentation (capeval.metrics._meteor_native.score.score_one)
    t_total = sum(row[4:20:4]) + sum(row[6:20:4])
    r_total = sum(row[5:20:4]) + sum(row[7:20:4])
    if t_total == row[0] and r_total == row[1] and row[20] == 1:
        return 0.0
    return row[20] / ((row[21] + row[22]) / 2)


# --- one batch ---------------------------------------------------------------------------------


def same(a: float, b: float) -> bool:
    a, b = float(a), float(b)
    return a == b or (math.isnan(a) and math.isnan(b))


def run_batch(rows: list[tuple[str, list[str]]], meteor, report: dict, label: str) -> None:
    if len(rows) < 2:
        # capeval refuses CIDEr-D's df from one unit (every score would be 0); pycocoevalcap gives 0
        raise ValueError("a batch needs at least 2 rows")
    import capeval
    from capeval.text import ptb
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    gts = {i: [{"caption": r} for r in refs] for i, (_, refs) in enumerate(rows)}
    res = {i: [{"caption": c}] for i, (c, _) in enumerate(rows)}
    with quiet():
        jar_refs = PTBTokenizer().tokenize(gts)
        jar_cands = PTBTokenizer().tokenize(res)
    cands = [c for c, _ in rows]
    flat = [r for _, refs in rows for r in refs]
    mine_c = ptb.tokenize_lines(cands)
    mine_flat = ptb.tokenize_lines(flat)
    per_c = ptb.tokenize(cands)
    per_flat = ptb.tokenize(flat)
    jar_c = [jar_cands[i][0] for i in range(len(rows))]
    jar_flat = [t for i in range(len(rows)) for t in jar_refs[i]]
    for texts, mine, per, jar in ((cands, mine_c, per_c, jar_c), (flat, mine_flat, per_flat, jar_flat)):
        for t, m, p, j in zip(texts, mine, per, jar):
            report["captions"] += 1
            report["tokens"] += len(j.split())
            if m != j and _jvm_case_only(j, m):
                report["jvm_case"] = report.get("jvm_case", 0) + 1
                _example(report, "jvm_case", {"batch": label, "text": t, "jar": j, "capeval": m})
            elif m != j:
                report["token_differences"] += 1
                _example(report, "token", {"batch": label, "text": t, "jar": j, "capeval": m})
            elif p != j:
                report["context_only"] += 1
                _example(report, "context_only", {"batch": label, "text": t, "jar_in_batch": j, "per_caption": p})
    mine_refs, k = [], 0
    for _, refs in rows:
        mine_refs.append(mine_flat[k:k + len(refs)])
        k += len(refs)
    with quiet():
        ref = reference_scores(
            {i: list(jar_refs[i]) for i in range(len(rows))},
            {i: list(jar_cands[i]) for i in range(len(rows))},
            meteor,
            report,
        )
        # The public batch tokenizer: equal to tokenize_lines on the candidates and the references.
        got = capeval.score(cands, [r for _, r in rows], list(FAMILIES), allow_empty=True, tokenizer="ptb-batch")
    for name in FAMILIES:
        if name not in ref:
            continue
        corpus, per = ref[name]
        mine = got.per_caption[name]
        for i in range(len(rows)):
            if not same(per[i], mine[i]):
                report["score_differences"][name] += 1
                item = {"batch": label, "row": i, "candidate": rows[i][0], "references": rows[i][1],
                        "pycocoevalcap": repr(per[i]), "capeval": repr(float(mine[i]))}
                if name == "meteor":
                    item.update(_meteor_diagnosis(meteor, mine_c[i], mine_refs[i], got, i))
                _example(report, name, item)
        if not same(corpus, got.corpus[name]):
            report["corpus_differences"][name] += 1
            _example(report, "corpus_" + name, {"batch": label, "pycocoevalcap": repr(corpus),
                                                "capeval": repr(float(got.corpus[name]))})


def _meteor_diagnosis(meteor, cand: str, refs: list[str], got, i: int) -> dict:
    """What to look at first in a METEOR difference: the jar's statistics line against capeval's,
    and the fragmentation's power as the JVM and capeval compute it (``Math.pow`` is not
    correctly rounded on x86_64 HotSpot; native METEOR's table covers fragmentations of up to
    ``MAX_SUM`` matches, docs/METRICS.md)."""
    from capeval.metrics._meteor_native.score import pow_beta

    with quiet():
        jar_stats = meteor._stat(cand.replace("|||", "").replace("  ", " "), refs)
    row = [float(x) for x in jar_stats.split()]
    frag = _frag(row)
    powers = jvm_pow([frag])
    mine = got.details["meteor"]["stats"][i] if "meteor" in got.details else None
    return {"jar_stats": jar_stats, "capeval_stats": mine, "frag": repr(frag),
            "jvm_pow": repr(powers[frag]) if powers else None, "capeval_pow": repr(pow_beta(frag))}


def _example(report: dict, kind: str, item: dict) -> None:
    lst = report["examples"].setdefault(kind, [])
    if len(lst) < 20:
        lst.append(item)


def new_report() -> dict:
    return {
        "rows": 0, "captions": 0, "tokens": 0, "token_differences": 0, "context_only": 0,
        "score_differences": dict.fromkeys(FAMILIES, 0), "corpus_differences": dict.fromkeys(FAMILIES, 0),
        "reference_failures": 0,
        "examples": {},
    }
