"""The score pass reads the chunks the df pass validated and tokenized (``prep-*.bin`` in the run
folder) instead of the input; a missing or damaged one sends it back to the input, with the
same bytes either way."""
from __future__ import annotations

import pytest

from capeval import score_stream
from capeval.inputs import write_result

from ._rows import make_rows, write_jsonl

METRICS = ["bleu4", "rouge_l", "cider_d"]


def _expected(tmp_path, rows) -> bytes:
    from capeval import score

    res = score([r["candidate"] for r in rows], [r["references"] for r in rows], METRICS,
                ids=[r["id"] for r in rows])
    out = tmp_path / "mem.jsonl"
    write_result(res, out, [r["id"] for r in rows])
    return out.read_bytes()


def _run(tmp_path, rows, at_df_end, jobs: int = 1, expect_prep: int = 5) -> bytes:
    """A streamed run whose progress callback calls ``at_df_end(run_dir, src)`` once, after the
    df pass's last chunk (every prepared chunk is then saved, no chunk scored)."""
    src = tmp_path / "rows.jsonl"
    write_jsonl(src, rows)
    out = tmp_path / "out.jsonl"
    run_dir = tmp_path / "out.jsonl.capeval-run"
    called = []

    def progress(stage, n):
        if stage == "df" and n == len(rows):
            assert sorted(p.name for p in run_dir.glob("prep-*.bin")) == [f"prep-{i:07d}.bin" for i in range(expect_prep)]
            at_df_end(run_dir, src)
            called.append(n)

    score_stream(src, METRICS, output=out, chunk_size=len(rows) // 5, jobs=jobs, progress=progress)
    assert called and not run_dir.exists()
    return out.read_bytes()


@pytest.mark.parametrize("jobs", [1, 2])
def test_score_pass_does_not_read_the_input_again(tmp_path, jobs, monkeypatch):
    rows = make_rows(500, seed=21)
    want = _expected(tmp_path, rows)

    def no_more_reading(run_dir, src):
        # (a changed input is refused at the end, by its content digest: test_run_folder.py)
        def refuse(*a, **k):
            raise AssertionError("the score pass read the input again")

        monkeypatch.setattr("capeval.stream.run.open_rows", refuse)

    assert _run(tmp_path, rows, no_more_reading, jobs) == want


def _truncate(p):
    p.write_bytes(p.read_bytes()[:-7])


def _other_key(p):
    """A whole file with a valid HMAC of this run, saved under another key (another run's rows)."""
    from capeval.stream.store import RunStore

    store = RunStore.__new__(RunStore)  # the run's secret, without taking its lock
    store.folder, store.secret = p.parent, bytes.fromhex((p.parent / "run.key").read_text())
    chunk = store.load(int(p.name[5:12]), _saved_key(p), kind="prep")
    chunk.cands[0] = "a different candidate"
    store.save(int(p.name[5:12]), "0" * 64, chunk, kind="prep")


def _saved_key(p):
    import json
    import struct

    from capeval.stream.store import _MAGIC

    payload = p.read_bytes()[len(_MAGIC) + 65:]
    (n,) = struct.unpack_from("<Q", payload)
    return json.loads(payload[8:8 + n])["v"][1][0]  # ["t", [key, chunk]]


@pytest.mark.parametrize("damage", [_truncate, _other_key, lambda p: p.unlink()], ids=["truncated", "other key",
                                                                                      "deleted"])
def test_damaged_prepared_chunk_falls_back_to_the_input(tmp_path, damage):
    rows = make_rows(500, seed=22)
    assert _run(tmp_path, rows, lambda run_dir, src: damage(run_dir / "prep-0000002.bin")) == _expected(tmp_path, rows)


class _Id(str):
    """An id of a subclass of str: kept as its text."""


@pytest.mark.parametrize("wrap", [str, _Id])
def test_prepared_chunks_of_an_iterable(tmp_path, wrap):
    from capeval import score

    rows = make_rows(400, seed=23)
    items = [(wrap(r["id"]), r["candidate"], r["references"]) for r in rows]
    seen = []

    def progress(stage, n):
        run_dir = tmp_path / "run"
        if stage == "df" and n == len(rows):
            seen.append(sorted(p.name for p in run_dir.glob("prep-*.bin")))

    got = score_stream(items, METRICS, chunk_size=100, run_dir=tmp_path / "run", progress=progress)
    assert seen == [[f"prep-{i:07d}.bin" for i in range(4)]]
    want = score([r["candidate"] for r in rows], [r["references"] for r in rows], METRICS, ids=[r["id"] for r in rows])
    assert got.corpus == want.corpus and got.signatures == want.signatures
    assert all(got.per_caption[m].tolist() == want.per_caption[m].tolist() for m in METRICS)


def test_no_room_for_prepared_chunks(tmp_path, monkeypatch):
    """Writing the cache fails (a full disk): the run goes on, and the score pass reads the
    input from the first chunk not saved; no partial file is left."""
    from capeval.stream.store import RunStore

    real = RunStore.save
    calls = []

    def save(self, index, key, obj, kind="chunk"):
        if kind == "prep" and index >= 2:
            calls.append(index)
            real(self, index, key, obj, kind)  # the file is written, then the disk "fills up"
            (self.folder / f"prep-{index:07d}.bin").unlink()
            raise OSError(28, "No space left on device")
        return real(self, index, key, obj, kind)

    monkeypatch.setattr(RunStore, "save", save)
    rows = make_rows(500, seed=24)

    def check(run_dir, src):
        assert sorted(p.name for p in run_dir.iterdir() if p.name.startswith((".prep", "prep"))) == [
            "prep-0000000.bin", "prep-0000001.bin"]

    assert _run(tmp_path, rows, check, expect_prep=2) == _expected(tmp_path, rows)
    assert calls == [2]  # not tried again after the failure


def test_failed_write_leaves_no_temporary(tmp_path, monkeypatch):
    import os

    from capeval.stream import store

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        store._atomic_write(tmp_path / "chunk-0000000.bin", b"x" * 100)
    assert list(tmp_path.iterdir()) == []
