"""score_stream == capeval.score: per caption, corpus, signatures, details and file bytes."""
from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest

from capeval import score, score_stream
from capeval.errors import InputError
from capeval.inputs import write_result
from capeval.rowfiles import write_rows

from ._rows import make_rows, write_jsonl

METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider"]


def _in_memory(rows, metrics=METRICS, **kw):
    return score([r["candidate"] for r in rows], [r["references"] for r in rows], metrics,
                 ids=[r["id"] for r in rows], **kw)


def _same(a, b, metrics=METRICS):
    assert a.n == b.n
    assert a.corpus == b.corpus
    assert a.signatures == b.signatures
    for m in metrics:
        assert a.per_caption[m].tolist() == b.per_caption[m].tolist(), m
    assert a.details == b.details


@pytest.fixture(scope="module")
def rows():
    return make_rows(1300)


@pytest.fixture(scope="module")
def reference(rows):
    return _in_memory(rows)


@pytest.mark.parametrize("chunk", [1, 97, 500, 5000])
def test_jsonl_chunked_equals_in_memory(tmp_path, rows, reference, chunk):
    if chunk == 1:
        rows = rows[:40]
        reference = _in_memory(rows)
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    _same(reference, score_stream(p, METRICS, chunk_size=chunk))


def test_csv_tsv_parquet_inputs(tmp_path, rows, reference):
    import pyarrow as pa
    import pyarrow.parquet as pq

    k = max(len(r["references"]) for r in rows)
    header = ["id", "candidate", *[f"ref{j + 1}" for j in range(k)]]
    table = [[r["id"], r["candidate"], *(r["references"] + [""] * (k - len(r["references"])))] for r in rows]
    with (tmp_path / "in.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *table])
    (tmp_path / "in.tsv").write_text("\n".join("\t".join(x) for x in [header, *table]) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "candidate": [r["candidate"] for r in rows],
                             "references": [r["references"] for r in rows]}), tmp_path / "in.parquet",
                   row_group_size=333)
    for name in ("in.csv", "in.tsv", "in.parquet"):
        _same(reference, score_stream(tmp_path / name, METRICS, chunk_size=256))


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_output_files_byte_identical_to_in_memory(tmp_path, rows, reference, suffix):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    mem = tmp_path / f"mem{suffix}"
    ids = [r["id"] for r in rows]
    if suffix == ".parquet":  # row groups follow the chunk size, so give the writer the same
        write_rows(mem, ids, reference.per_caption, reference.corpus, reference.signatures, chunk_rows=211)
    else:
        write_result(reference, mem, ids)
    out = tmp_path / f"streamed{suffix}"
    res = score_stream(p, METRICS, output=out, chunk_size=211)
    assert res.corpus == reference.corpus and res.per_caption == {}
    assert out.read_bytes() == mem.read_bytes()
    assert out.with_suffix(".signatures.json").read_bytes() == mem.with_suffix(".signatures.json").read_bytes()
    assert not (tmp_path / f"streamed{suffix}.capeval-run").exists()
    if suffix == ".jsonl":
        lines = out.read_text().splitlines()
        assert len(lines) == len(rows)
        first = json.loads(lines[0])
        assert list(first) == ["id", *METRICS] and first["id"] == rows[0]["id"]
        assert first["cider_d"] == reference.per_caption["cider_d"][0]


def test_jobs_2_equals_in_memory(tmp_path, rows, reference):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    _same(reference, score_stream(p, METRICS, chunk_size=200, jobs=2))


def test_iterator_api_one_shot_and_list(rows, reference):
    gen = ((r["id"], r["candidate"], r["references"]) for r in rows)
    _same(reference, score_stream(gen, METRICS, chunk_size=300))
    _same(reference, score_stream(rows, METRICS, chunk_size=300))
    no_ids = score([r["candidate"] for r in rows], [r["references"] for r in rows], METRICS)
    _same(no_ids, score_stream(((r["candidate"], r["references"]) for r in rows), METRICS, chunk_size=300))


def test_line_breaks_var_nrefs_and_emptied_counts(tmp_path):
    rows = make_rows(120, seed=3)
    rows[70]["references"][0] = "a dog\u2028on grass"
    rows[90]["candidate"] = "..."     # empty after the PTB tokenizer
    rows[100]["references"].append("!")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _in_memory(rows, allow_empty=True)
    p = tmp_path / "x.jsonl"
    write_jsonl(p, rows)
    with pytest.warns(UserWarning, match="1 candidates, 1 references empty after the ptb tokenizer"):
        got = score_stream(p, METRICS, chunk_size=50, allow_empty=True)
    _same(ref, got)
    assert "+breaks=space" in got.signatures["bleu4"] and "nrefs:var" in got.signatures["cider_d"]
    with pytest.raises(InputError, match=r"empty after the ptb tokenizer .*input rows 50-99"):
        score_stream(p, METRICS, chunk_size=50)


def test_saved_df_file(tmp_path, rows):
    from capeval.metrics.cider import DocumentFrequency

    df_path = tmp_path / "df.json"
    _in_memory(rows[:400], ["cider_d"], options={"cider_d": {"save_df": str(df_path)}})
    ref = _in_memory(rows, ["cider_d", "bleu4"], options={"cider_d": {"df": str(df_path)}})
    p = tmp_path / "in.jsonl"
    write_jsonl(p, rows)
    for jobs in (1, 2):
        _same(ref, score_stream(p, ["cider_d", "bleu4"], options={"cider_d": {"df": str(df_path)}},
                                chunk_size=300, jobs=jobs), ["cider_d", "bleu4"])
    obj = DocumentFrequency.load(df_path)
    _same(ref, score_stream(p, ["cider_d", "bleu4"], options={"cider_d": {"df": obj}}, chunk_size=300),
          ["cider_d", "bleu4"])


@pytest.mark.parametrize("metrics", [["bleu4"], ["cider_d"]])  # the score pass reads the input / the df pass's chunks
@pytest.mark.parametrize("ints", [False, True])
def test_duplicate_id_across_chunks_named_with_lines(tmp_path, metrics, ints):
    rows = make_rows(300)
    if ints:
        for i, r in enumerate(rows):
            r["id"] = 1000 + i
    rows[250]["id"] = rows[12]["id"]
    p = tmp_path / "d.jsonl"
    write_jsonl(p, rows)
    out = tmp_path / "o.jsonl"
    want = "1012" if ints else "'r12'"
    with pytest.raises(InputError, match=rf"d.jsonl:251: duplicate id {want} \(first on line 13\)"):
        score_stream(p, metrics, chunk_size=100, output=out)
    assert not out.exists()


def test_refusals(tmp_path):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, make_rows(20))
    from tests.learn._floor_model import REFUSAL, floor_model

    with pytest.raises(InputError, match="learned cannot be streamed: learned: " + REFUSAL):
        score_stream(p, ["bleu4", "learned"], options={"learned": {"model": floor_model(tmp_path / "floor.npz")}})
    with pytest.raises(InputError, match=r"bertscore_f cannot be streamed: bertscore reproduces bert_score's batch "
                       r"padding .* stream it with padding_floor=False or batch_size=1"):
        score_stream(p, ["bertscore_f"], options={"bertscore": {"idf": True}})
    with pytest.raises(InputError, match="overwrite the input"):
        score_stream(p, ["bleu4"], output=p)
    with pytest.raises(InputError, match="streamed output is .jsonl"):
        score_stream(p, ["bleu4"], output=tmp_path / "o.json")
    with pytest.raises(InputError, match="save_df"):
        score_stream(p, ["cider_d"], options={"cider_d": {"save_df": str(tmp_path / "df.json")}})
    with pytest.raises(InputError, match="jobs must be a positive integer"):
        score_stream(p, ["bleu4"], jobs=0)


def test_single_row_cider_refused_as_in_memory(tmp_path):
    p = tmp_path / "one.jsonl"
    write_jsonl(p, make_rows(1))
    with pytest.raises(InputError, match="1 unit gives ln"):
        score_stream(p, ["cider_d"])


def test_hashed_df_equals_dict_df(tmp_path):
    from capeval.dedup import dedupe
    from capeval.metrics.cider import DocumentFrequency
    from capeval.stream.dfstore import DfAccumulator, chunk_df
    from capeval.text import tokenize_corpus

    rows = make_rows(500, seed=11)
    _, refs = tokenize_corpus([r["candidate"] for r in rows], [r["references"] for r in rows])
    units = dedupe(["x"] * len(refs), refs)
    plain = DocumentFrequency.from_references(units.refsets, units.refset_rows.tolist())
    acc = DfAccumulator()
    for s in range(0, len(refs), 64):
        acc.add(*chunk_df(refs[s:s + 64]), n_rows=len(refs[s:s + 64]))
    acc2 = DfAccumulator()
    for s in range(0, len(refs), 37):
        acc2.add(*chunk_df(refs[s:s + 37]), n_rows=len(refs[s:s + 37]))
    grams = sorted(plain.df) + ["never seen gram", "zebra"]
    for hashed in (acc.result(), acc2.result(tmp_path)):  # in memory; written and memory-mapped
        assert hashed.lookup(grams).tolist() == plain.lookup(grams).tolist()
        assert len(hashed) == len(plain.df) and hashed.n_units == plain.n_units == 500
        assert np.all(np.diff(hashed.keys[:, 0].astype(np.float64)) >= 0)  # one sorted table over the buckets


def test_hashed_df_first_half_clash_resolved():
    from capeval.stream.dfstore import HashedDocumentFrequency, gram_keys

    k = gram_keys(["a", "b", "c"]).copy()
    k[1, 0] = k[0, 0]  # force two n-grams to share their first 64 bits
    order = np.lexsort((k[:, 1], k[:, 0]))
    dfo = HashedDocumentFrequency(k[order], np.array([5, 7, 9], dtype=np.uint32)[order], 10)
    import capeval.stream.dfstore as mod

    real = mod.gram_keys
    mod.gram_keys = lambda grams: k[[["a", "b", "c"].index(g) for g in grams]]
    try:
        assert dfo.lookup(["a", "b", "c"]).tolist() == [5.0, 7.0, 9.0]
    finally:
        mod.gram_keys = real
