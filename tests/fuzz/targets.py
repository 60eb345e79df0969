"""Fuzz targets over capeval's public surface: ``capeval.score``, every file reader and the
meta-evaluation statistics.

Each target is a hypothesis strategy and a check. The check passes when capeval either gives a
correct result or refuses the input with a named error (:class:`capeval.errors.CapevalError`);
any other exception (a raw traceback) or a wrong result (a cell moved, a row dropped, a NaN
correlation) fails it. ``tests/fuzz/test_fuzz.py`` runs every target with a small budget in CI;
``benchmarks/fuzz_counts.py`` runs the same targets with a large one and records the counts.
"""
from __future__ import annotations

import io
import json
import math
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from capeval.errors import CapevalError

#: Outcome counts per target ("scored", "refused", ...), filled by the checks.
OUTCOMES: dict[str, Counter] = {}


def _count(target: str, outcome: str) -> None:
    OUTCOMES.setdefault(target, Counter())[outcome] += 1


def _refused(target: str, e: Exception, what: str = "refused") -> None:
    """Count a named refusal under its kind of message (quoted items, numbers and paths blanked)."""
    import re

    msg = re.sub(r"'[^']*'|\"[^\"]*\"|/\S*|-?\d[\d.e+-]*|\[[^\]]*\]", "_", str(e).split(";")[0])
    _count(target, f"{what}: {type(e).__name__}: {msg[:70]}")


# -- text ---------------------------------------------------------------------------------------

WORDS = ["a", "dog", "runs", "on", "the", "grass", "two", "cats", "A", "DOG", "don't", "U.S.", "e-mail",
         "café", "naïve", "日本", "собака", "١٢٣", "3.5"]
#: Spaces, line and paragraph separators, zero-width and format characters, controls.
SEPARATORS = [" ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u00a0",
              "\u1680", "\u2000", "\u2007", "\u200b", "\u200d", "\u2028", "\u2029", "\u202f", "\u3000",
              "\ufeff", "\x00", "\x7f"]
PUNCT = ["...", ".", ",", "-", "--", "'", '"', "``", "''", "(", ")", "-LRB-", "!?", "…", "—", "\u0301", "😀",
         "\U0001F1EB\U0001F1F7", "&amp;", "<", ";"]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]


def texts(surrogates: bool = True, max_parts: int = 10, min_parts: int = 0) -> st.SearchStrategy[str]:
    """Captions: mostly words and spaces, with separators, punctuation, random code points and
    (when ``surrogates``: JSON can carry them, a UTF-8 file cannot) lone surrogates among them."""
    word = st.sampled_from(WORDS)
    odd = [st.sampled_from(SEPARATORS), st.sampled_from(PUNCT),
           st.characters(exclude_categories=() if surrogates else ("Cs",))]
    if surrogates:
        odd.append(st.sampled_from(SURROGATES))
    return st.lists(st.one_of(word, word, word, st.just(" "), st.just(" "), st.one_of(*odd)),
                    min_size=min_parts, max_size=max_parts).map("".join)


def _rarely(draw, p: int = 8) -> bool:
    """True about once in ``p`` draws."""
    return draw(st.integers(0, p - 1)) == p // 2  # hypothesis favours the bounds of a range


# -- capeval.score ------------------------------------------------------------------------------

FAST_METRICS = ["bleu1", "bleu4", "bleu4_smooth", "rouge_l", "cider_d", "cider", "ter"]


@st.composite
def score_inputs(draw, metrics=tuple(FAST_METRICS), max_rows: int = 5):
    n = draw(st.integers(0, 1)) if _rarely(draw) else draw(st.integers(2, max_rows))
    some = 0 if _rarely(draw) else 1  # mostly captions with a part or more, sometimes empty ones
    cands = draw(st.lists(texts(min_parts=some), min_size=n, max_size=n))
    refs = draw(st.lists(st.lists(texts(min_parts=some), min_size=0 if _rarely(draw) else 1, max_size=3),
                         min_size=n, max_size=n))
    if _rarely(draw, 10):  # lengths that do not align
        refs = refs + [["extra reference"]] if draw(st.booleans()) else refs[:-1]
    ids = None
    if draw(st.booleans()):
        ids = _unique(draw(st.lists(st.one_of(st.integers(-5, 5), texts(max_parts=3)), min_size=len(cands),
                                    max_size=len(cands))))
        if _rarely(draw, 10):
            ids = ids + [0] if draw(st.booleans()) else ids + ids[:1]  # too many ids, or a duplicate
    tokenizer = draw(st.sampled_from(["ptb", "none"]))
    allow_empty = draw(st.booleans())
    line_breaks = "refuse" if _rarely(draw, 4) else "space"
    return dict(cands=cands, refs=refs, metrics=list(metrics), tokenizer=tokenizer, ids=ids,
                allow_empty=allow_empty, line_breaks=line_breaks)


def _score(inp, cands, refs, ids):
    import capeval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty-after-tokenization warnings: counted in details
        return capeval.score(cands, refs, inp["metrics"], tokenizer=inp["tokenizer"], ids=ids,
                             allow_empty=inp["allow_empty"], line_breaks=inp["line_breaks"])


def check_score(inp: dict, target: str = "score") -> None:
    from capeval.metrics.registry import list_metrics

    ranges = {m.name: m.range for m in list_metrics()}
    cands, refs, ids = inp["cands"], inp["refs"], inp["ids"]
    try:
        res = _score(inp, cands, refs, ids)
    except CapevalError as e:
        _refused(target, e)
        return
    n = len(cands)
    # What must have been refused.
    assert n > 0 and len(refs) == n and all(len(r) > 0 for r in refs), "misaligned or empty input accepted"
    assert ids is None or len(ids) == n, "ids of another length accepted"
    assert inp["allow_empty"] or all(c.strip() for c in cands), "an empty candidate accepted"
    for m in inp["metrics"]:
        lo, hi = ranges[m]
        col = np.asarray(res.per_caption[m], dtype=float)
        assert col.shape == (n,), f"{m}: {col.shape[0]} per-caption scores for {n} rows"
        assert np.all(np.isfinite(col)), f"{m}: non-finite per-caption score {col}"
        assert np.all((col >= lo - 1e-9) & (col <= hi + 1e-9)), f"{m}: per-caption score outside [{lo}, {hi}]: {col}"
        c = res.corpus[m]
        assert math.isfinite(c) and lo - 1e-9 <= c <= hi + 1e-9, f"{m}: corpus {c} outside [{lo}, {hi}]"
        assert m in res.signatures
    # No silent shift: the rows reversed give the per-caption scores reversed (every metric
    # here is row-local or, for CIDEr, uses the df of the whole reference set, which is the same).
    rev = _score(inp, cands[::-1], refs[::-1], None if ids is None else ids[::-1])
    for m in inp["metrics"]:
        a = np.asarray(res.per_caption[m], dtype=float)[::-1]
        b = np.asarray(rev.per_caption[m], dtype=float)
        assert np.allclose(a, b, rtol=1e-12, atol=1e-15), f"{m}: reversing the rows changed the scores {a} vs {b}"
    _count(target, "scored")


@st.composite
def stream_inputs(draw):
    inp = draw(score_inputs(metrics=("bleu1", "bleu4", "rouge_l", "cider_d"), max_rows=7))
    inp["chunk_size"] = draw(st.integers(1, 4))
    return inp


def check_stream(inp: dict, target: str = "score_stream") -> None:
    """``capeval.score_stream`` over an iterable, in chunks, == ``capeval.score`` on the same rows."""
    from capeval import score_stream

    cands, refs, ids = inp["cands"], inp["refs"], inp["ids"]
    try:
        whole = _score(inp, cands, refs, ids)
    except CapevalError:
        whole = None
    rows = list(zip(ids, cands, refs)) if ids is not None else list(zip(cands, refs))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            streamed = score_stream(iter(rows), inp["metrics"], tokenizer=inp["tokenizer"],
                                    allow_empty=inp["allow_empty"], line_breaks=inp["line_breaks"],
                                    chunk_size=inp["chunk_size"])
    except CapevalError as e:
        # Refused rows must be refused by both (zip drops misaligned tails: those rows are fine).
        aligned = len(cands) == len(refs) and (ids is None or len(ids) == len(cands))
        assert whole is None or not aligned, f"score_stream refused rows capeval.score took: {e}"
        _refused(target, e)
        return
    if whole is None:
        # Misaligned lists are refused by score but zip()ped into fewer rows here: score those.
        n = len(rows)
        whole = _score(inp, [r[-2] for r in rows], [r[-1] for r in rows], None if ids is None else ids[:n])
    for m in inp["metrics"]:
        assert np.array_equal(np.asarray(streamed.per_caption[m]), np.asarray(whole.per_caption[m])), \
            f"{m}: streamed per-caption scores differ"
        assert streamed.corpus[m] == whole.corpus[m], f"{m}: streamed corpus {streamed.corpus[m]} != {whole.corpus[m]}"
    _count(target, "scored, == capeval.score")


# -- readers: JSONL ----------------------------------------------------------------------------

def _unique(keys: list) -> list:
    seen: set = set()
    out = []
    for k in keys:
        while (type(k), k) in seen:
            k = f"{k}_" if isinstance(k, str) else k + 1000
        seen.add((type(k), k))
        out.append(k)
    return out


@st.composite
def jsonl_files(draw):
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(st.one_of(st.integers(-10**12, 10**12), texts(max_parts=3)), min_size=n, max_size=n))
    rows = dict(
        ids=_unique(ids) if draw(st.integers(0, 7)) else ids,  # now and then duplicates
        cands=draw(st.lists(texts(), min_size=n, max_size=n)),
        refs=draw(st.lists(st.lists(texts(), max_size=3), min_size=n, max_size=n)),
        with_ids=draw(st.booleans()),
        ascii=draw(st.booleans()),
        crlf=draw(st.booleans()),
        bom=draw(st.booleans()),
        blank=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
    )
    return rows


def _write_jsonl(path: Path, f: dict) -> list[int]:
    """Writes the rows; returns the line of each record."""
    lines, where = [], []
    for k, (key, cand, refs) in enumerate(zip(f["ids"], f["cands"], f["refs"])):
        if f["blank"][k]:
            lines.append("  ")
        obj = {"id": key, "candidate": cand, "references": refs} if f["with_ids"] else \
            {"candidate": cand, "references": refs}
        # ensure_ascii=False leaves lone surrogates raw: written as invalid UTF-8, to be refused.
        lines.append(json.dumps(obj, ensure_ascii=f["ascii"]))
        where.append(len(lines))
    text = ("\r\n" if f["crlf"] else "\n").join(lines) + "\n"
    path.write_bytes((b"\xef\xbb\xbf" if f["bom"] else b"") + text.encode("utf-8", "surrogatepass"))
    return where


def check_jsonl(f: dict, target: str = "reader_jsonl") -> None:
    from capeval.inputs import read_jsonl
    from capeval.stream.readers import open_rows

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.jsonl"
        where = _write_jsonl(p, f)
        written_ids = [str(k) for k in f["ids"]] if f["with_ids"] else []
        has_surrogate = any(0xD800 <= ord(ch) <= 0xDFFF for s in [*written_ids, *f["cands"],
                                                                   *[r for rs in f["refs"] for r in rs]] for ch in s)
        raw_surrogates = has_surrogate and not f["ascii"]  # written as invalid UTF-8 bytes
        # What a JSON reader must return: an escaped surrogate pair is one character.
        canon = lambda v: json.loads(json.dumps(v))  # noqa: E731
        expect_ids = [canon(k) for k in f["ids"]] if f["with_ids"] else where
        expect_cands, expect_refs = canon(f["cands"]), canon(f["refs"])
        dup = len({(type(k), k) for k in expect_ids}) < len(expect_ids) or \
            len({json.dumps(k) for k in expect_ids}) < len(expect_ids)
        err = None
        try:
            ids, cands, refs = read_jsonl(p)
        except CapevalError as e:
            assert raw_surrogates or dup, "a valid JSONL file refused"
            ids, err = None, e
        if ids is not None:
            assert not raw_surrogates, "invalid UTF-8 accepted"
            assert not dup, "duplicate ids accepted"
            assert ids == expect_ids and [type(k) for k in ids] == [type(k) for k in expect_ids], "ids shifted"
            assert cands == expect_cands, "candidates shifted"
            assert refs == expect_refs, "references shifted"
        try:
            streamed = [(line, key, c, r) for line, key, c, r in open_rows(p)]
        except CapevalError as e:
            assert raw_surrogates, "a valid JSONL file refused by the streaming reader"
            _refused(target, err or e)
            return
        assert not raw_surrogates
        assert [r[2] for r in streamed] == expect_cands and [r[3] for r in streamed] == expect_refs
        assert [r[0] for r in streamed] == where, "streaming reader: line numbers shifted"
        if ids is not None:
            assert [r[1] for r in streamed] == ids
        _count(target, "read whole" if ids is not None else "duplicate ids refused")


#: Lines that are almost JSONL records: any JSON value, broken JSON, odd keys and types.
_json_values = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | texts(max_parts=3),
                            lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                                st.sampled_from(["id", "candidate", "references", "x", "ID"]), kids, max_size=4),
                            max_leaves=8)


@st.composite
def jsonl_garbage(draw):
    good = st.fixed_dictionaries({"candidate": texts(), "references": st.lists(texts(), max_size=3)},
                                 optional={"id": st.integers() | texts(max_parts=2)}).map(json.dumps)
    lines = draw(st.lists(st.one_of(
        good, good, good,
        _json_values.map(lambda v: json.dumps(v)),
        st.fixed_dictionaries({"candidate": _json_values, "references": _json_values},
                               optional={"id": _json_values}).map(json.dumps),
        texts(max_parts=6)), min_size=0, max_size=5))
    sep = draw(st.sampled_from(["\n", "\r\n", "\r", "\u2028"]))
    return sep.join(lines)


def check_jsonl_garbage(text: str, target: str = "reader_jsonl_garbage") -> None:
    import capeval
    from capeval.inputs import read_jsonl
    from capeval.stream.readers import open_rows

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.jsonl"
        p.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            ids, cands, refs = read_jsonl(p)
        except CapevalError as e:
            ids, err = None, e
        try:
            streamed = list(open_rows(p))
        except CapevalError:
            streamed = None
        if ids is not None and streamed is not None:
            assert [r[2] for r in streamed] == cands and [r[3] for r in streamed] == refs
        if ids is None:
            _refused(target, err)
            return
        assert all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in ids), f"ids {ids} accepted"
        try:  # whatever the reader let through, scoring validates
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                capeval.score(cands, refs, ["bleu1", "rouge_l"], tokenizer="none", ids=ids)
            _count(target, "read and scored")
        except CapevalError as e:
            _refused(target, e, "read, refused by score")


# -- readers: CSV / TSV -------------------------------------------------------------------------

CSV_LIMIT = 131072


@st.composite
def table_files(draw, tsv: bool = False):
    n_refs = draw(st.integers(1, 3))
    ref_names = draw(st.sampled_from([
        [f"ref{k + 1}" for k in range(n_refs)], [f"Ref_{k + 1}" for k in range(n_refs)],
        [f"reference{k + 1}" for k in range(n_refs)], ["ref"] if n_refs == 1 else [f"REF{k}" for k in range(n_refs)]]))
    with_id = draw(st.booleans())
    cols = (["id"] if with_id else []) + ["candidate"] + ref_names
    cols = draw(st.permutations(cols))
    forbidden = "\t\r\n" if tsv else ""
    cell = texts(surrogates=False).map(lambda s: "".join(ch for ch in s if ch not in forbidden))
    if not tsv and draw(st.integers(0, 19)) == 0:  # now and then a field over the csv limit
        cell = st.one_of(cell, st.just("x" * (CSV_LIMIT + 1)))
    n = draw(st.integers(1, 5))
    rows = draw(st.lists(st.fixed_dictionaries({c: cell for c in cols}), min_size=n, max_size=n))
    if with_id and draw(st.integers(0, 3)):  # mostly unique, non-blank ids
        for k, r in enumerate(rows):
            r["id"] = (r["id"].strip() or "id") + f"#{k}"
    return dict(cols=list(cols), rows=rows, tsv=tsv, bom=draw(st.booleans()), quote_all=draw(st.booleans()),
                terminator=draw(st.sampled_from(["\r\n", "\n"] if tsv else ["\r\n", "\n", "\r"])))


def _write_table(path: Path, t: dict) -> list[int]:
    """Writes the table; returns the physical line each row starts on (``\\n``, ``\\r`` and
    ``\\r\\n`` each end a line)."""
    chunks = []
    if t["tsv"]:
        chunks.append("\t".join(t["cols"]) + t["terminator"])
        chunks += ["\t".join(r[c] for c in t["cols"]) + t["terminator"] for r in t["rows"]]
    else:
        # RFC 4180 by hand: Python 3.11's csv.writer leaves a lone \r unquoted when the line
        # terminator is "\n", which makes a different (and ambiguous) file.
        def cell(v: str) -> str:
            return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\r\n') or t["quote_all"] else v

        for row in [t["cols"]] + [[r[c] for c in t["cols"]] for r in t["rows"]]:
            chunks.append(",".join(map(cell, row)) + t["terminator"])
    starts, line = [], 1
    for k, ch in enumerate(chunks):
        if k:
            starts.append(line)
        line += len(io.StringIO(ch, newline="").readlines())
    path.write_bytes((b"\xef\xbb\xbf" if t["bom"] else b"") + "".join(chunks).encode("utf-8"))
    return starts


def check_table(t: dict, target: str = "reader_csv") -> None:
    from capeval.inputs import read_csv
    from capeval.stream.readers import open_rows

    ref_cols = [c for c in t["cols"] if c not in ("id", "candidate")]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / ("in.tsv" if t["tsv"] else "in.csv")
        starts = _write_table(p, t)
        expect_refs = [[r[c] for c in ref_cols if r[c]] for r in t["rows"]]
        expect_ids = [r["id"] for r in t["rows"]] if "id" in t["cols"] else [str(s) for s in starts]
        too_long = any(len(v) > CSV_LIMIT for r in t["rows"] for v in r.values())
        invalid = (too_long or any(not refs for refs in expect_refs) or len(set(expect_ids)) < len(expect_ids)
                   or any(not k.strip() for k in expect_ids))
        err = None
        try:
            ids, cands, refs = read_csv(p)
        except CapevalError as e:
            assert invalid, f"a valid table refused: {e}"
            ids, err = None, e
        if ids is not None:
            assert not invalid, "an invalid table accepted"
            assert ids == expect_ids, f"ids shifted: {ids} vs {expect_ids}"
            assert cands == [r["candidate"] for r in t["rows"]], "candidates shifted"
            assert refs == expect_refs, "references shifted"
        try:
            streamed = list(open_rows(p))
        except CapevalError as e:
            assert ids is None, "the streaming reader refused a table the in-memory reader read"
            _refused(target, err or e)
            return
        dup_only = ids is None and not too_long and all(expect_refs) and all(k.strip() for k in expect_ids)
        assert ids is not None or dup_only, "the streaming reader accepted a table the in-memory reader refused"
        if ids is not None:  # duplicate ids are the streaming caller's check
            assert [(str(r[1]), r[2], r[3]) for r in streamed] == list(zip(ids, cands, refs)), \
                "streamed and in-memory readers disagree"
        _count(target, "read whole" if ids is not None else "duplicate ids refused")


@st.composite
def table_garbage(draw):
    header = draw(st.one_of(
        st.just(["id", "candidate", "ref1", "ref2"]), st.just(["candidate", "ref"]),
        st.lists(st.sampled_from(["id", "candidate", "ref", "ref1", "ref2", "Reference_3", "referee_note",
                                  "caption", "", " ref1 ", "REF1", "ref 1", "id"]), min_size=0, max_size=5)))
    sep = draw(st.sampled_from([",", "\t", ";"]))
    cell = st.one_of(texts(surrogates=False, max_parts=5), st.sampled_from(['"', '""', '"a,b"', ",", '"\n"', "\\"]))
    width = len(header)
    rows = draw(st.lists(st.one_of(st.lists(cell, min_size=width, max_size=width), st.lists(cell, max_size=6)),
                         max_size=4))
    line = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = line.join([sep.join(header)] + [sep.join(r) for r in rows])
    return dict(text=text, suffix=draw(st.sampled_from([".csv", ".tsv"])), raw=draw(st.binary(max_size=8)))


def check_table_garbage(g: dict, target: str = "reader_table_garbage") -> None:
    from capeval.inputs import read_csv
    from capeval.stream.readers import open_rows

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"in{g['suffix']}"
        p.write_bytes(g["text"].encode("utf-8") + g["raw"])
        try:
            whole = read_csv(p)
        except CapevalError as e:
            whole, err = None, e
        try:
            streamed = list(open_rows(p))
        except CapevalError:
            streamed = None
        if whole is not None:
            assert streamed is not None, "the streaming reader refused a file the in-memory reader read"
            assert [(str(r[1]), r[2], r[3]) for r in streamed] == list(zip(*whole)), \
                "streamed and in-memory readers disagree"
        if whole is None:
            _refused(target, err)
        else:
            _count(target, "read")


# -- readers: Parquet and COCO ------------------------------------------------------------------

@st.composite
def parquet_tables(draw):
    n = draw(st.integers(1, 6))
    cell = texts(surrogates=False)
    return dict(
        ids=[f"{draw(texts(surrogates=False, max_parts=2))}#{k}" for k in range(n)],
        with_ids=draw(st.booleans()),
        cands=draw(st.lists(cell, min_size=n, max_size=n)),
        refs=draw(st.lists(st.lists(st.one_of(st.none(), cell), min_size=1, max_size=3), min_size=n, max_size=n)),
        layout=draw(st.sampled_from(["list", "columns"])),
        batch=draw(st.integers(1, 4)),
    )


def check_parquet(t: dict, target: str = "reader_parquet") -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capeval.stream.readers import open_rows

    cols: dict[str, Any] = {}
    if t["with_ids"]:
        cols["id"] = pa.array(t["ids"], pa.string())
    cols["candidate"] = pa.array(t["cands"], pa.string())
    width = max(len(r) for r in t["refs"])
    if t["layout"] == "list":
        cols["references"] = pa.array([[x for x in r if x is not None] for r in t["refs"]], pa.list_(pa.string()))
        expect_refs = [[x for x in r if x is not None] for r in t["refs"]]
    else:
        for k in range(width):
            cols[f"ref{k + 1}"] = pa.array([r[k] if k < len(r) else None for r in t["refs"]], pa.string())
        expect_refs = [[x for x in r if x] for r in t["refs"]]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.parquet"
        pq.write_table(pa.table(cols), p, row_group_size=2)
        try:
            rows = list(open_rows(p, parquet_batch=t["batch"]))
        except CapevalError as e:
            assert t["layout"] == "columns" and any(not r for r in expect_refs), "a valid Parquet file refused"
            _refused(target, e)
            return
    assert [r[2] for r in rows] == t["cands"], "candidates shifted"
    assert [r[3] for r in rows] == expect_refs, "references shifted"
    assert [r[1] for r in rows] == (t["ids"] if t["with_ids"] else list(range(1, len(rows) + 1))), "ids shifted"
    _count(target, "read whole")


@st.composite
def coco_files(draw):
    images = draw(st.lists(st.one_of(st.integers(0, 10**9), texts(max_parts=2)), min_size=1, max_size=4, unique=True))
    anns = {"annotations": [{"image_id": i, "caption": draw(texts())}
                            for i in images for _ in range(draw(st.integers(1, 3)))]}
    res: Any = [{"image_id": i, "caption": draw(texts())} for i in draw(st.permutations(images))]
    corruption = draw(st.sampled_from(["none", "none", "none", "dict-results", "drop-key", "dup-result",
                                       "unknown-image", "unhashable-id", "any-json-anns", "any-json-res",
                                       "odd-entry"]))
    if corruption == "dict-results":
        res = {"annotations": res}
    elif corruption == "drop-key":
        del draw(st.sampled_from(res + anns["annotations"]))[draw(st.sampled_from(["image_id", "caption"]))]
    elif corruption == "dup-result":
        res.append(dict(res[0]))
    elif corruption == "unknown-image":
        res.append({"image_id": "no-such-image-" + "x" * 3, "caption": "a"})
    elif corruption == "unhashable-id":
        draw(st.sampled_from(res + anns["annotations"]))["image_id"] = draw(st.sampled_from([[1], {"a": 1}]))
    elif corruption == "any-json-anns":
        anns = draw(_json_values)
    elif corruption == "any-json-res":
        res = draw(_json_values)
    elif corruption == "odd-entry":
        (res if draw(st.booleans()) else anns["annotations"]).append(draw(_json_values))
    return dict(anns=anns, res=res)


def check_coco(c: dict, target: str = "reader_coco") -> None:
    from capeval.inputs import read_coco

    with tempfile.TemporaryDirectory() as d:
        a, r = Path(d) / "ann.json", Path(d) / "res.json"
        a.write_text(json.dumps(c["anns"]), encoding="utf-8")
        r.write_text(json.dumps(c["res"]), encoding="utf-8")
        try:
            ids, cands, refs = read_coco(r, a)
        except CapevalError as e:
            _refused(target, e)
            return
    c = json.loads(json.dumps(c))  # what the files say: an escaped surrogate pair is one character
    gts: dict = {}
    for x in c["anns"]["annotations"]:
        gts.setdefault(x["image_id"], []).append(x["caption"])
    res = c["res"]["annotations"] if isinstance(c["res"], dict) else c["res"]
    assert ids == [x["image_id"] for x in res] and cands == [x["caption"] for x in res]
    assert refs == [gts[k] for k in ids]
    _count(target, "read whole")


# -- statistics ---------------------------------------------------------------------------------

_finite = st.one_of(st.floats(-1e6, 1e6), st.integers(-3, 3), st.sampled_from([0.0, 0.5, 1.0, 2.0]))
_hostile = st.sampled_from([float("nan"), float("inf"), -float("inf"), None, "a", "", [1.0], 1e308, -1e308,
                            5e-324, True])


@st.composite
def vectors(draw, n: int) -> list:
    """``n`` numbers: mostly finite (with ties); sometimes constant, extreme (1e±300,
    subnormal), or with one hostile value (NaN, ±inf, None, a string, a list)."""
    kind = draw(st.integers(0, 9))
    if kind == 6:
        return [draw(_finite)] * n
    if kind == 7:
        return draw(st.lists(st.sampled_from([1e300, -1e300, 1e-300, 5e-324, 0.0, 1e-12, 1.0 + 1e-15]),
                             min_size=n, max_size=n))
    v = draw(st.lists(_finite, min_size=n, max_size=n))
    if kind >= 8 and n:
        v[draw(st.integers(0, n - 1))] = draw(_hostile)
    return v


@st.composite
def correlation_inputs(draw):
    from capeval.stats.correlation import STATISTICS

    n = draw(st.integers(0, 12))
    x = draw(vectors(n))
    y = draw(vectors(max(0, n + (draw(st.sampled_from([-1, 1])) if _rarely(draw, 10) else 0))))
    if _rarely(draw, 6):
        y = [-v if isinstance(v, (int, float)) else v for v in x]  # perfectly (anti-)correlated
    statistic = draw(st.sampled_from(STATISTICS)) if not _rarely(draw, 10) else draw(st.sampled_from(["tau", "rho", "r"]))
    return dict(x=x, y=y, statistic=statistic)


def _finite_numbers(v) -> bool:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return False
    return a.ndim == 1 and bool(np.all(np.isfinite(a)))


def check_correlation(c: dict, target: str = "meta_correlation") -> None:
    from capeval.stats import correlate

    try:
        r = correlate(c["x"], c["y"], c["statistic"])
    except CapevalError as e:
        _refused(target, e)
        return
    assert _finite_numbers(c["x"]) and _finite_numbers(c["y"]), "NaN, inf or a non-number accepted"
    assert len(c["x"]) == len(c["y"]) >= 3
    lo = 0.0 if r.statistic == "r2" else -1.0
    assert math.isfinite(r.value) and lo - 1e-12 <= r.value <= 1 + 1e-12, f"{r.statistic} = {r.value}"
    assert r.p_value is None or (math.isfinite(r.p_value) and 0.0 <= r.p_value <= 1.0), f"p = {r.p_value}"
    # The bootstrap's batched form gives the same coefficient on the same rows.
    from capeval.stats.correlation import batched

    b = float(batched(r.statistic)(np.asarray([c["x"]], dtype=float), np.asarray([c["y"]], dtype=float))[0])
    assert math.isclose(b, r.value, rel_tol=1e-9, abs_tol=1e-12), f"batched {r.statistic} {b} != {r.value}"
    _count(target, "computed")


@st.composite
def bootstrap_inputs(draw):
    c = draw(correlation_inputs())
    c.update(n_resamples=draw(st.integers(-1, 0)) if _rarely(draw, 10) else draw(st.integers(1, 40)),
             seed=draw(st.integers(0, 2**32)),
             level=draw(st.sampled_from([0.0, 1.0, 1.5, float("nan")])) if _rarely(draw, 10) else
             draw(st.sampled_from([0.95, 0.5, 0.99])),
             strata=draw(st.none() | st.lists(st.sampled_from("ab"), min_size=len(c["x"]), max_size=len(c["x"]))),
             paired=draw(st.booleans()))
    return c


def check_bootstrap(c: dict, target: str = "meta_bootstrap") -> None:
    from capeval.stats import bootstrap_correlation, paired_bootstrap_correlation

    try:
        if c["paired"]:
            b = paired_bootstrap_correlation(c["x"], c["x"][::-1], c["y"], c["statistic"],
                                             n_resamples=c["n_resamples"], seed=c["seed"], level=c["level"],
                                             strata=c["strata"])
            values = [b.value_a, b.value_b, b.delta]
            # NaN p only when no resample gave both statistics (then counted in b.undefined).
            assert 0.0 < b.p_value <= 1.0 or (math.isnan(b.p_value) and b.undefined == b.n_resamples), \
                f"p = {b.p_value} with {b.undefined} of {b.n_resamples} resamples undefined"
        else:
            b = bootstrap_correlation(c["x"], c["y"], c["statistic"], n_resamples=c["n_resamples"], seed=c["seed"],
                                      level=c["level"], strata=c["strata"])
            values = [b.value]
            # NaN bounds only when no resample was defined (then counted in b.undefined).
            assert not math.isnan(b.low) or b.undefined == b.n_resamples, "NaN interval with defined resamples"
    except CapevalError as e:
        _refused(target, e)
        return
    assert _finite_numbers(c["x"]) and _finite_numbers(c["y"]), "NaN, inf or a non-number accepted"
    assert c["n_resamples"] >= 1 and 0 < c["level"] < 1, "a bad n_resamples or level accepted"
    assert all(math.isfinite(v) for v in values), f"non-finite statistic {values}"
    assert (math.isnan(b.low) and math.isnan(b.high)) or b.low <= b.high, f"interval [{b.low}, {b.high}]"
    _count(target, "computed")


@st.composite
def williams_inputs(draw):
    ok = st.floats(-0.99, 0.99)
    bad = st.sampled_from([1.0, -1.0, 1.5, float("nan"), float("inf"), -float("inf")])
    r = [draw(bad) if _rarely(draw, 10) else draw(ok) for _ in range(3)]
    n = draw(st.one_of(st.integers(-2, 3), st.sampled_from([4.5, float("nan"), float("inf"), 10**30, "20"]))) \
        if _rarely(draw, 6) else draw(st.integers(4, 10**6))
    m = draw(st.integers(0, 10))
    return dict(r12=r[0], r13=r[1], r23=r[2], n=n,
                df=draw(st.sampled_from(["n-1"])) if _rarely(draw, 10) else draw(st.sampled_from(["n-3", "n-2"])),
                scores=[draw(vectors(m)) for _ in range(3)])


def check_williams(w: dict, target: str = "meta_williams") -> None:
    from capeval.stats import williams_from_scores, williams_test

    try:
        t = williams_test(w["r12"], w["r13"], w["r23"], w["n"], df=w["df"])
        assert math.isfinite(t.t) and 0.0 <= t.p_value <= 1.0, f"t = {t.t}, p = {t.p_value}"
        _count(target, "test computed")
    except CapevalError as e:
        _refused(target, e, "test refused")
    try:
        t = williams_from_scores(*w["scores"], df=w["df"])
    except CapevalError as e:
        _refused(target, e, "from scores refused")
        return
    assert all(_finite_numbers(s) for s in w["scores"]), "NaN, inf or a non-number accepted"
    assert math.isfinite(t.t) and 0.0 <= t.p_value <= 1.0, f"t = {t.t}, p = {t.p_value}"
    _count(target, "from scores computed")


@st.composite
def pairwise_inputs(draw):
    n = draw(st.integers(0 if _rarely(draw) else 1, 8))
    labels = draw(st.lists(st.sampled_from([0, 1, 0.5]), min_size=n, max_size=n))
    if n and _rarely(draw):
        labels[draw(st.integers(0, n - 1))] = draw(st.one_of(_hostile, st.sampled_from([2, -1, 0.25])))
    return dict(a=draw(vectors(n)), b=draw(vectors(n + (1 if _rarely(draw, 10) else 0))), labels=labels,
                categories=draw(st.none() | st.lists(st.sampled_from(["x", "y", 3]), min_size=n, max_size=n)),
                policy="coin" if _rarely(draw, 10) else draw(st.sampled_from(["half", "random", "b", "fail"])),
                resamples=draw(st.integers(1, 20)))


def check_pairwise(p: dict, target: str = "meta_pairwise") -> None:
    from capeval.stats import bootstrap_accuracy, pairwise_accuracy

    try:
        acc = pairwise_accuracy(p["a"], p["b"], p["labels"], p["categories"], tie_policy=p["policy"])
        ci = bootstrap_accuracy(acc, n_resamples=p["resamples"])
    except CapevalError as e:
        _refused(target, e)
        return
    assert all(_finite_numbers(v) for v in (p["a"], p["b"], p["labels"])), "NaN, inf or a non-number accepted"
    assert len(p["a"]) == len(p["b"]) == len(p["labels"]) >= 1
    for v in [acc.mean, acc.overall, *acc.accuracy.values(), ci.low, ci.high]:
        assert math.isfinite(v) and 0.0 <= v <= 1.0, f"accuracy {v}"
    _count(target, "computed")


# -- capeval.compat: pycocoevalcap's API and the fork's df pickles -----------------------------

@st.composite
def coco_dicts(draw):
    """pycocoevalcap-shaped input: ``{image id: [{"caption": ...}]}`` for annotations and
    results, sometimes with ids that do not match, two results for an image, or no caption."""
    n = draw(st.integers(0, 1)) if _rarely(draw) else draw(st.integers(1, 5))
    ids = _unique(draw(st.lists(st.one_of(st.integers(-5, 5), texts(max_parts=3)), min_size=n, max_size=n)))
    gts = {i: [{"caption": t} for t in draw(st.lists(texts(), min_size=0 if _rarely(draw) else 1, max_size=3))]
           for i in ids}
    res = {i: [{"caption": draw(texts())}] for i in ids}
    if ids and _rarely(draw, 10):
        res[ids[0]].append({"caption": "a second result"})
    if ids and _rarely(draw, 10):
        res.pop(ids[-1])
    if ids and _rarely(draw, 10):
        res[ids[0]] = [{"caption": draw(st.one_of(st.none(), st.integers()))}]
    return dict(gts=gts, res=res)


_compat_meteor: list = []


def check_compat_pycocoevalcap(inp: dict, target: str = "compat_pycocoevalcap") -> None:
    """The shim's tokenizer and scorers give per-image scores of the right shape and range, or
    refuse with a named error."""
    import contextlib

    from capeval.compat.pycocoevalcap.bleu.bleu import Bleu
    from capeval.compat.pycocoevalcap.cider.cider import Cider
    from capeval.compat.pycocoevalcap.meteor.meteor import Meteor
    from capeval.compat.pycocoevalcap.rouge.rouge import Rouge
    from capeval.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    if not _compat_meteor:
        _compat_meteor.append(Meteor())  # its resources load once
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            tok = PTBTokenizer()
            gts, res = tok.tokenize(inp["gts"]), tok.tokenize(inp["res"])
            outs = [(s.method(), s.compute_score(gts, res)) for s in (Bleu(4), Rouge(), Cider(), _compat_meteor[0])]
    except CapevalError as e:
        _refused(target, e)
        return
    n = len(gts)
    assert n >= 1 and gts.keys() == res.keys() and all(len(v) == 1 for v in res.values())
    for name, (corpus, per) in outs:
        for c, p in (zip(corpus, per) if name == "Bleu" else [(corpus, per)]):
            col = np.asarray(p, dtype=float)
            assert col.shape == (n,), f"{name}: {col.shape} scores for {n} images"
            assert np.all(np.isfinite(col)) and math.isfinite(c), f"{name}: non-finite score"
            assert np.all(col >= 0) and c >= 0, f"{name}: negative score"
    _count(target, "scored")


_pickle_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                         texts(surrogates=False, max_parts=3), st.binary(max_size=4))
_pickle_value = st.recursive(_pickle_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner), st.frozensets(st.integers(0, 3), max_size=2),
    st.dictionaries(st.one_of(st.tuples(texts(surrogates=False, max_parts=2)), st.text(max_size=3)), inner,
                    max_size=3)), max_leaves=8)


@st.composite
def fork_df_pickles(draw):
    """Files handed to ``capeval compat convert-cider-df``: well-formed df pickles, near misses
    and arbitrary pickled values or bytes."""
    import collections
    import pickle

    kind = draw(st.sampled_from(["df", "df", "value", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "value":
        return pickle.dumps(draw(_pickle_value), protocol=draw(st.sampled_from([0, 2, 4])))
    grams = draw(st.dictionaries(st.lists(st.sampled_from(WORDS + ["", "a b"]), min_size=0, max_size=5).map(tuple),
                                 st.one_of(st.integers(0, 12), st.floats(-1, 12)), max_size=5))
    df = collections.defaultdict(float, grams) if draw(st.booleans()) else grams
    ref_len = draw(st.one_of(st.integers(0, 12), st.floats(0, 12), st.none()))
    return pickle.dumps({"document_frequency": df, "ref_len": ref_len}, protocol=draw(st.sampled_from([0, 2])))


def check_fork_df(data: bytes, target: str = "compat_fork_df") -> None:
    """Either a df whose every count lies in [0, n_units], or a named refusal; never anything else."""
    from capeval.compat.fork_df import read_fork_df

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "df.p"
        path.write_bytes(data)
        try:
            fork = read_fork_df(path)
        except CapevalError as e:
            _refused(target, e)
            return
    assert fork.n_units >= 2 and all(0 <= v <= fork.n_units for v in fork.df.values())
    assert all(1 <= len(k.split(" ")) <= 4 and k.split() == k.split(" ") for k in fork.df)
    _count(target, "read")


# -- registry -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    strategy: Callable[[], st.SearchStrategy]
    check: Callable[[Any], None]
    ci_examples: int  # budget per CI run (tests/fuzz/test_fuzz.py)
    what: str


TARGETS: dict[str, Target] = {
    "score": Target(score_inputs, check_score, 150,
                    "capeval.score on bleu1/bleu4/bleu4_smooth/rouge_l/cider_d/cider/ter: random unicode "
                    "(separators, controls, surrogates, punctuation-only), misaligned lists, ids, both tokenizers"),
    "score_meteor": Target(lambda: score_inputs(metrics=("meteor",), max_rows=3), lambda x: check_score(x, "score_meteor"),
                           15, "capeval.score on meteor (native backend), same inputs"),
    "score_stream": Target(stream_inputs, check_stream, 60,
                           "capeval.score_stream over an iterable in chunks of 1-4 rows == capeval.score "
                           "(per-caption and corpus, exact)"),
    "reader_jsonl": Target(jsonl_files, check_jsonl, 150,
                           "JSONL round trip (in-memory and streaming readers): ids, BOM, CRLF, blank lines, "
                           "escaped and raw unicode, lone surrogates, duplicate ids"),
    "reader_jsonl_garbage": Target(jsonl_garbage, check_jsonl_garbage, 150,
                                   "near-JSONL lines (any JSON value, wrong types, broken JSON), then scored"),
    "reader_csv": Target(table_files, check_table, 150,
                         "CSV round trip: shuffled columns, quotes, commas, line breaks in cells, BOM, CRLF, "
                         "fields over the csv limit, blank ids and references, duplicate ids"),
    "reader_tsv": Target(lambda: table_files(tsv=True), lambda t: check_table(t, "reader_tsv"), 150,
                         "TSV round trip: quotes and commas as plain characters"),
    "reader_table_garbage": Target(table_garbage, check_table_garbage, 150,
                                   "random CSV/TSV text and trailing bytes: in-memory and streaming readers agree"),
    "reader_parquet": Target(parquet_tables, check_parquet, 60,
                             "Parquet round trip: list or refN columns, null cells, batch sizes 1-4"),
    "reader_coco": Target(coco_files, check_coco, 150, "COCO results + annotations of any JSON shape"),
    "meta_correlation": Target(correlation_inputs, check_correlation, 200,
                               "pearson/spearman/kendall τ-b/τ-c/R²: NaN, ±inf, huge/tiny/subnormal, constant, "
                               "tied, misaligned, short, non-numeric"),
    "meta_bootstrap": Target(bootstrap_inputs, check_bootstrap, 100,
                             "bootstrap and paired bootstrap: the same values, strata, n_resamples, levels"),
    "meta_williams": Target(williams_inputs, check_williams, 150,
                            "Williams test on random r and n (NaN, ±inf, |r| = 1) and from random scores"),
    "meta_pairwise": Target(pairwise_inputs, check_pairwise, 150,
                            "pairwise accuracy + bootstrap: NaN/inf scores, bad labels, categories, tie policies"),
    "compat_pycocoevalcap": Target(coco_dicts, check_compat_pycocoevalcap, 60,
                                   "the pycocoevalcap shim: tokenizer + Bleu, Rouge, Cider, Meteor on odd captions "
                                   "and ids, mismatched or doubled results"),
    "compat_fork_df": Target(fork_df_pickles, check_fork_df, 150,
                             "the fork's df pickle reader: near-miss dfs, arbitrary pickled values, random bytes"),
}


def run_target(name: str, max_examples: int, *, derandomize: bool, seed: int | None = None) -> None:
    """Run one target under hypothesis; raises on the first (shrunk) failure."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    t = TARGETS[name]

    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(t.strategy())
    def prop(x):
        _count(name, "examples")
        t.check(x)

    if seed is not None:
        prop = hseed(seed)(prop)
    prop()
