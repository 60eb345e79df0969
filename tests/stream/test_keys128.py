"""The streamed df's 128-bit n-gram keys: the compiled core and the numpy twin give the same keys
and the same chunk tables; a run folder of the old format is refused, not mixed in."""
from __future__ import annotations

import json
import random
from pathlib import Path

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
    words = ["a", "dog", "on", "the", "x"] * 6 + ["caf\u00e9", "x\ud800", "\u4e2d\u6587"]
    # Plain ASCII texts (read in place by the core) and texts whose whitespace str.split() must
    # normalise: leading, trailing, doubled, ASCII control and Unicode spaces.
    seps = [" "] * 40 + ["  ", "\t", "\n", " \x1c", "\x0b", "\x0c", "\x1d", "\x1e", "\x1f", "\u3000", "\xa0"]

    def ref() -> str:
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(0, 12)))
        return rng.choice(["", "", "", " ", "\r"]) + (text[:-1] if rng.random() < 0.7 else text)

    refs = [[ref() for _ in range(rng.randint(1, 5))] for _ in range(400)]
    ascii_refs = [r for rs in refs for r in rs if r.isascii()]
    assert sum(r == " ".join(r.split()) for r in ascii_refs) > 100 and sum(r != " ".join(r.split()) for r in ascii_refs) > 100
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
    assert disk.files is not None and Path(disk.files[0]).name == f"df-{disk.digest()}-keys.npy"
    assert np.load(disk.files[0], mmap_mode="r").shape == (2, len(mem))
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


def _table_with_clashes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Random keys with runs of shared first halves (some with equal, some with other second
    halves), repeated keys, and the extreme first halves 0 and 2**64 - 1."""
    keys = rng.integers(0, 2**64 - 1, size=(n, 2), dtype=np.uint64, endpoint=True)
    keys[5:9, 0] = keys[4, 0]           # first-half clashes
    keys[20:23] = keys[19]              # the same key again
    keys[40:44, 0] = np.uint64(2**64 - 1)
    keys[60:63, 0] = 0
    counts = rng.integers(1, 1000, size=n).astype(np.uint32)
    return keys, counts


def _reduce_reference(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    merged: dict[tuple[int, int], int] = {}
    for k, c in zip(map(tuple, keys.tolist()), counts.tolist()):
        merged[k] = merged.get(k, 0) + c
    ordered = sorted(merged)
    return np.array(ordered, dtype=np.uint64).reshape(-1, 2), np.array([merged[k] for k in ordered], dtype=np.uint32)


@pytest.mark.parametrize("runs", [1, 3])
def test_reduce_sorts_and_merges_as_a_full_sort(runs):
    """_reduce sorts on the first half only unless a first half repeats with another second
    half: with and without such clashes, the table is the (first, second)-sorted merge."""
    rng = np.random.default_rng(7)
    keys, counts = _table_with_clashes(rng, 3000)
    for with_clash in (True, False):
        k = keys if with_clash else keys[70:]
        c = counts if with_clash else counts[70:]
        # as the accumulator calls it: a concatenation of sorted runs
        parts = [dfstore._reduce(k[i::runs], c[i::runs]) for i in range(runs)]
        got = dfstore._reduce(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        want = _reduce_reference(k, c)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@needs_core
def test_compiled_lookup_equals_the_numpy_twin(monkeypatch, tmp_path):
    rng = np.random.default_rng(11)
    raw_keys, raw_counts = _table_with_clashes(rng, 20_000)
    # 300 keys sharing their top 40 bits: one large bucket of the core's query sort
    raw_keys[-300:, 0] = (raw_keys[-300:, 0] & np.uint64(0xFFFFFF)) | np.uint64(0xABCDEF << 40)
    keys, counts = dfstore._reduce(raw_keys, raw_counts)
    acc = dfstore.DfAccumulator()
    acc.add(keys, counts, 10)
    dfo = acc.result(tmp_path)  # memory-mapped columns, as a streamed run reads them
    assert dfo._clash
    missing = rng.integers(0, 2**64 - 1, size=(3000, 2), dtype=np.uint64, endpoint=True)
    near = keys[rng.integers(0, len(keys), size=500)].copy()
    near[:, 1] ^= np.uint64(1)  # first half present, second not
    crowded = keys[(keys[:, 0] >> np.uint64(40)) == np.uint64(0xABCDEF)]
    assert len(crowded) == 300
    q = np.concatenate([keys[rng.integers(0, len(keys), size=5000)], keys[:80], keys[-80:], missing, near, crowded,
                        np.array([[0, 0], [2**64 - 1, 2**64 - 1]], dtype=np.uint64)])
    q = q[rng.permutation(len(q))]
    compiled = dfo._lookup_keys(q)
    monkeypatch.setattr(_compiled, "core", None)
    twin = dfo._lookup_keys(q)
    assert compiled.tolist() == twin.tolist()
    assert (twin > 0).sum() >= 5160 and (twin == 0).sum() >= 3000
    assert dfo._lookup_keys(q[:0]).tolist() == [] and dfstore.HashedDocumentFrequency(
        keys[:0], counts[:0], 1)._lookup_keys(q[:5]).tolist() == [0.0] * 5


@needs_core
def test_large_chunk_tables_agree_with_and_without_the_core(monkeypatch):
    """Enough distinct n-grams (some 60k) for the compiled table's bucketed sort to matter."""
    rng = random.Random(9)
    words = [f"w{i}" for i in range(3000)] + ["caf\u00e9", "\u4e2d"]
    refs = [[" ".join(rng.choice(words) for _ in range(rng.randint(0, 14))) for _ in range(rng.randint(1, 5))]
            for _ in range(2500)]
    k1, c1 = dfstore.chunk_df(refs)
    monkeypatch.setattr(_compiled, "core", None)
    k2, c2 = dfstore.chunk_df(refs)
    assert len(k1) > 50_000 and np.array_equal(k1, k2) and np.array_equal(c1, c2)
