"""The streamed df's 128-bit n-gram keys: the compiled core and the numpy twin give the same keys
and the same chunk tables; a run folder of the old format is refused, not mixed in."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from capeval import _compiled
from capeval.errors import InputError
from capeval.stream import dfstore
from capeval.stream.store import RUN_FORMAT, RunStore

needs_core = pytest.mark.skipif(_compiled.core is None, reason="compiled core not built")

ALPHABET = "ab c\u00e9\u4e2d\U0001F600\ud800x\t"


def _strings(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    fixed = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "x" * 200, "lone \ud800 surrogate", "a\x00", "a\x00\x00"]
    return fixed + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(n)]


@needs_core
def test_compiled_and_numpy_keys_agree():
    strs = _strings(3000, 1)
    compiled = dfstore.gram_keys(strs)
    twin = dfstore._key128_numpy([s.encode("utf-8", "surrogatepass") for s in strs])
    assert compiled.dtype == twin.dtype == np.uint64 and compiled.shape == (len(strs), 2)
    assert np.array_equal(compiled, twin)
    # distinct strings, distinct keys (zero padding and length do not collide: "a", "a\0", "a\0\0")
    assert len({tuple(k) for k in compiled.tolist()}) == len(set(strs))


@needs_core
def test_chunk_tables_agree_with_and_without_the_core(monkeypatch):
    rng = random.Random(3)
    words = ["a", "dog", "on", "the", "caf\u00e9", "x\ud800", "\u4e2d\u6587"]
    refs = [[" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) + rng.choice(["", "  ", "\u3000"])
             for _ in range(rng.randint(1, 5))] for _ in range(400)]
    k1, c1 = dfstore.chunk_df(refs)
    monkeypatch.setattr(_compiled, "core", None)
    k2, c2 = dfstore.chunk_df(refs)
    assert np.array_equal(k1, k2) and np.array_equal(c1, c2)
    assert int(c1.sum()) == sum(len({" ".join(r.split()[i:i + k]) for r in rs for k in range(1, 5)
                                     for i in range(len(r.split()) - k + 1)}) for rs in refs)


def test_lookup_on_a_saved_table_is_the_in_memory_one(tmp_path):
    acc = dfstore.DfAccumulator()
    acc.add(*dfstore.chunk_df([["a man rides a horse", "a horse"], ["two dogs"]]), n_rows=2)
    saved = dfstore.DfAccumulator()
    saved.add(*dfstore.chunk_df([["a man rides a horse", "a horse"], ["two dogs"]]), n_rows=2)
    mem, disk = acc.result(), saved.result(tmp_path)
    assert np.load(tmp_path / "df_keys.npy", mmap_mode="r").shape == (2, len(mem))
    grams = ["a", "horse", "a horse", "man rides a horse", "two dogs", "cat"]
    assert mem.lookup(grams).tolist() == disk.lookup(grams).tolist() == [1, 1, 1, 1, 1, 0]
    assert mem.digest() == disk.digest()


def test_old_run_folder_is_refused(tmp_path):
    old = tmp_path / "out.jsonl.capeval-run"
    old.mkdir()
    manifest = json.dumps({"version": "0.1.0", "settings": "...", "chunk_size": 2000, "df": "corpus"})
    (old / "run.json").write_text(manifest)
    (old / "chunk-0000000.bin").write_bytes(b"old")
    with pytest.raises(InputError, match=rf"run-folder format 1, and this capeval reads and writes format {RUN_FORMAT}"):
        RunStore(old, {"a": 1})
    assert (old / "chunk-0000000.bin").read_bytes() == b"old"  # left as it was
    (old / "run.json").write_text("not json")
    with pytest.raises(InputError, match="unreadable run.json"):
        RunStore(old, {"a": 1})


def test_score_stream_refuses_an_old_run_folder(tmp_path):
    import capeval

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "candidate": "a dog", "references": ["a dog runs"]}) + "\n"
                            for i in range(4)))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"version": "0.1.0"}))
    with pytest.raises(InputError, match="neither resumed nor reused"):
        capeval.score_stream(rows, ["cider_d"], output=tmp_path / "o.jsonl", chunk_size=2, run_dir=run_dir)
    assert not (tmp_path / "o.jsonl").exists()


@needs_core
def test_lookup_ids_from_the_index_equals_lookup_by_string(tmp_path):
    from capeval.metrics._ngrams import NgramIndex

    rng = random.Random(5)
    words = ["a", "dog", "on", "the", "caf\u00e9", "\u4e2d", "x"]
    sents = list(dict.fromkeys(" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in range(300)))
    acc = dfstore.DfAccumulator()
    acc.add(*dfstore.chunk_df([sents[i:i + 3] for i in range(0, 150, 3)]), n_rows=50)
    dfo = acc.result(tmp_path)
    index = NgramIndex(sents)
    by_ids = dfo.lookup_ids(index)
    by_string = dfo.lookup(index.gram_strings(np.arange(index.n_grams)))
    assert by_ids.tolist() == by_string.tolist() and (by_ids > 0).sum() > 0 and (by_ids == 0).sum() > 0
