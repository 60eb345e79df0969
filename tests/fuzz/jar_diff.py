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

#: Issue 36's alphabet. Like every generator here it holds no line-break character but "\n"
#: (none, in fact): pycocoevalcap's wrapper lets the jar split a caption at \r, VT, FF, U+2028
#: and U+2029 and misalign the batch, and capeval reads NEL and U+001C-1E as spaces where the
#: jar keeps them inside URL-like tokens (docs/TOKENIZER.md, Known differences).
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
SEPARATORS = [" "] * 12 + ["", "  ", "\t", "\u00a0", " \u200b", "\u3000"]
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
       "中", "ﬁ", "’", "‘", "“", "”", "…"]
)


def dense_caption(rng: random.Random) -> str:
    k = rng.choice([1, 2, 3, 5, 8, 15, 30])
    text = "".join(rng.choice(DENSE) + (rng.choice(["", " ", " ", "\u00a0"]) if rng.random() < 0.6 else "")
                   for _ in range(k))
    return text.strip() or "x"


def dense_row(rng: random.Random) -> tuple[str, list[str]]:
    return dense_caption(rng), [dense_caption(rng) for _ in range(rng.randint(1, 6))]


GENERATORS = {"hostile": hostile_row, "grammar": grammar_row, "dense": dense_row}


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
            if m != j:
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
