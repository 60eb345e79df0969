"""Image families stream: CLIP-S/RefCLIP-S (and a user metric that reads images) streamed in
chunks of 1, 7 and a random size, in worker processes, as Ray tasks and through the CLI give
the in-memory numbers, signatures and file bytes; images resolve by ``capeval score``'s rules
with its errors; a killed run resumes from its chunks.

No CLIP weights exist here: a tiny random CLIP is built in the test (``tests/metrics/_tiny_clip``).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import capeval
from capeval import score_stream
from capeval.errors import InputError
from capeval.inputs import write_result
from capeval.metrics.registry import register_user
from capeval.metrics.user import UserMetric

from ._rows import assert_same_result as _same, make_rows, write_jsonl

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
pytest.importorskip("ftfy")

from tests.metrics._tiny_clip import build_hf, save_openai, synthetic_images  # noqa: E402

NAMES = ["clip_s", "refclip_s"]


class FirstByte(UserMetric):
    """Which file a row was scored with (importable by name, so workers unpickle it)."""

    name, version = "stream_first_byte", "1"

    def score(self, candidates, references, images):
        if images is None:
            return [-1.0] * len(candidates)
        return [float(Path(p).read_bytes()[0]) for p in images]


register_user(FirstByte)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tinyclip")
    model, merges = build_hf(root / "hf")
    pt = save_openai(model, root / "tiny.pt")
    imgs = root / "images"
    files = synthetic_images(imgs)
    (imgs / "val2014").mkdir()
    files += synthetic_images(imgs / "val2014", sizes=((120, 90), (90, 120)), seed=3)  # found by file name
    for i, f in enumerate(files[-2:]):
        f.rename(f.with_name(f"deep{i}{f.suffix}"))
    names = [f.name for f in files[:-2]] + ["deep0" + files[-2].suffix, "val2014/deep1" + files[-1].suffix]
    return {"pt": pt, "merges": merges, "images": imgs, "names": names,
            "options": {"clip_s": {"model": str(pt), "tokenizer": str(merges)}}}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    from capeval.metrics import _clip_models

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    _clip_models._memory.clear()


def _rows(tiny, n: int, seed: int = 34) -> list[dict]:
    rng = random.Random(seed)
    rows = make_rows(n, seed=seed)
    for r in rows:
        r["image"] = rng.choice(tiny["names"])
    return rows


def _in_memory(path: Path, tiny, names, out: Path | None = None):
    """What ``capeval score -i PATH --images DIR -m ... -o OUT`` computes in memory: its image
    resolution, capeval.score, write_result."""
    from capeval.cli.score import _read_with_images

    ids, cands, refs, images = _read_with_images(path, None, tiny["images"], names)
    res = capeval.score(cands, refs, names, ids=ids, images=images, options=tiny["options"])
    if out is not None:
        write_result(res, out, ids)
    return res


def test_clip_streams_in_any_chunking(tmp_path, tiny):
    rows = _rows(tiny, 40)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    names = [*NAMES, "bleu4", "cider_d", FirstByte.name]  # cider_d: chunks prepared by the df pass carry images
    mem = _in_memory(src, tiny, names, tmp_path / "mem.jsonl")
    assert len(set(mem.per_caption["clip_s"])) > 3  # the images and captions matter
    for size in (1, 7, random.Random(5).randint(2, 39)):
        out = tmp_path / f"o{size}.jsonl"
        got = score_stream(src, names, chunk_size=size, images=tiny["images"], options=tiny["options"],
                           output=out, keep_per_caption=True)
        _same(mem, got, names)
        assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes(), size
        assert out.with_name(f"o{size}.signatures.json").read_bytes() == \
            (tmp_path / "mem.signatures.json").read_bytes()


def test_iterable_rows_with_images_and_workers(tmp_path, tiny):
    """``score_stream(rows, images=DIR)`` over mappings with an ``image`` key, in two worker
    processes, without the embedding cache (every chunk embeds its own images)."""
    rows = _rows(tiny, 30, seed=9)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    options = {"clip_s": {**tiny["options"]["clip_s"], "embedding_cache": False}}
    from capeval.cli.score import _read_with_images

    ids, cands, refs, images = _read_with_images(src, None, tiny["images"], NAMES)
    mem = capeval.score(cands, refs, NAMES, ids=ids, images=images, options=options)
    got = score_stream(iter(rows), NAMES, chunk_size=7, jobs=2, images=tiny["images"], options=options)
    _same(mem, got, NAMES)
    # Without a directory an iterable's image values are paths as given.
    rows_abs = [{**r, "image": images[i]} for i, r in enumerate(rows)]
    _same(mem, score_stream(rows_abs, NAMES, chunk_size=11, options=options), NAMES)


def _cli(args, env, **kw):
    code = "from capeval.cli.main import main; main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **kw)


def _cli_args(tiny, src, out, *extra):
    return ["score", "-i", str(src), "--images", str(tiny["images"]), "-m", ",".join(NAMES), "-o", str(out),
            "-O", f"clip_s.model={tiny['pt']}", "-O", f"clip_s.tokenizer={tiny['merges']}", "-q", *extra]


@pytest.mark.slow
def test_cli_jobs_and_resume_after_kill(tmp_path, tiny):
    """``capeval score --images DIR -m clip_s --jobs 2`` writes the in-memory bytes; a run killed
    midway (SIGKILL) resumes from its complete chunks, scoring only the others."""
    rows = _rows(tiny, 300, seed=3)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    _in_memory(src, tiny, NAMES, tmp_path / "mem.jsonl")
    env = {**os.environ, "CAPEVAL_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "jobs.jsonl"
    proc = _cli(_cli_args(tiny, src, out, "--jobs", "2", "--chunk-size", "40"), env)
    assert proc.wait(timeout=600) == 0, proc.stderr.read().decode()
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("jobs.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()

    out = tmp_path / "killed.jsonl"
    run_dir = tmp_path / "killed.jsonl.capeval-run"
    proc = _cli(_cli_args(tiny, src, out, "--chunk-size", "2"), env)
    deadline = time.time() + 600
    while time.time() < deadline:
        if (run_dir.exists() and len(list(run_dir.glob("chunk-*.bin"))) >= 3) or proc.poll() is not None:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "the run finished before it could be killed"
    complete = len(list(run_dir.glob("chunk-*.bin")))
    assert 3 <= complete < 150
    scored = []
    score_stream(src, NAMES, output=out, chunk_size=2, images=tiny["images"], options=tiny["options"],
                 progress=lambda stage, n: scored.append(n))
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()
    assert out.with_name("killed.signatures.json").read_bytes() == (tmp_path / "mem.signatures.json").read_bytes()
    assert max(scored) == 2 * (150 - complete)  # the saved chunks were reused


@pytest.mark.slow
def test_ray_engine(tmp_path, tiny):
    ray = pytest.importorskip("ray")
    rows = _rows(tiny, 24, seed=4)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    mem = _in_memory(src, tiny, NAMES, tmp_path / "mem.jsonl")
    # Ray workers do not see this test's cache root: they keep no embeddings on disk.
    options = {"clip_s": {**tiny["options"]["clip_s"], "embedding_cache": False}}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray.jsonl"
        got = score_stream(src, NAMES, chunk_size=5, engine="ray", images=tiny["images"],
                           options=options, output=out, keep_per_caption=True)
    finally:
        ray.shutdown()
    _same(mem, got, NAMES)
    assert out.read_bytes() == (tmp_path / "mem.jsonl").read_bytes()


def _errors(tiny, tmp_path, rows) -> tuple[str, str]:
    """The in-memory error and the streamed one (chunks of 3), for one input."""
    src = tmp_path / "bad.jsonl"
    write_jsonl(src, rows)
    with pytest.raises(InputError) as mem:
        _in_memory(src, tiny, NAMES)
    with pytest.raises(InputError) as got:
        score_stream(src, NAMES, chunk_size=3, images=tiny["images"], options=tiny["options"])
    return str(mem.value), str(got.value)


@pytest.mark.parametrize("case,phrase", [
    ("missing", "2 image(s) not found"),       # two in different chunks: counted over the whole input
    ("no_image", "item 'r7' has no image (2 item(s) in all)"),
    ("absolute", "is an absolute path"),
    ("dotdot", "('..')"),
])
def test_image_errors_are_the_in_memory_ones(tmp_path, tiny, case, phrase):
    rows = _rows(tiny, 14)
    if case == "missing":
        rows[4]["image"], rows[11]["image"] = "gone.png", "also_gone.jpg"
    elif case == "no_image":
        del rows[7]["image"], rows[12]["image"]
    elif case == "absolute":
        rows[5]["image"] = str(tiny["images"] / tiny["names"][0])
    else:
        rows[8]["image"] = "../" + tiny["names"][0]
    mem, got = _errors(tiny, tmp_path, rows)
    assert phrase in mem
    assert got == mem


def test_no_image_anywhere_and_images_after_rows_without(tmp_path, tiny):
    rows = make_rows(9)
    mem, got = _errors(tiny, tmp_path, rows)
    assert "no item names an image" in mem and got == mem
    # A metric that only accepts images: rows without any are scored without them, and rows
    # that name one after rows that did not are refused as in memory.
    src = tmp_path / "plain.jsonl"
    write_jsonl(src, rows)
    got_plain = score_stream(src, [FirstByte.name], chunk_size=2)
    assert got_plain.corpus[FirstByte.name] == -1.0
    rows[6]["image"] = tiny["names"][0]
    write_jsonl(src, rows)
    with pytest.raises(InputError, match=r"item 'r0' has no image \(8 item\(s\) in all\)"):
        score_stream(src, [FirstByte.name], chunk_size=2)


def test_cli_streams_images_and_names_a_missing_one(tmp_path, tiny):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    rows = _rows(tiny, 8)
    rows[5]["image"] = "nowhere.png"
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    r = CliRunner().invoke(app, _cli_args(tiny, src, tmp_path / "o.jsonl", "--chunk-size", "2"))
    assert r.exit_code == 2 and "nowhere.png" in r.output and "Traceback" not in r.output


def test_chunk_digest_follows_the_images(tmp_path, tiny):
    """A resumed run scores a chunk again when one of its images was replaced."""
    from capeval.metrics.registry import family_for
    from capeval.stream.images import ImageRows
    from capeval.stream.readers import chunks, open_rows

    imgs = tmp_path / "imgs"
    synthetic_images(imgs, sizes=((32, 32), (40, 30)))
    rows = [{"id": "a", "candidate": "x", "references": ["y"], "image": "img0.png"},
            {"id": "b", "candidate": "x", "references": ["y"], "image": "img1.jpg"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def digests():
        pics = ImageRows(src, imgs, [family_for("clip_s")])
        return [(c.digest, c.images) for c in chunks(open_rows(src, with_image=True), 1, images=pics.resolve)]

    before = digests()
    assert [p for _, p in before] == [[str(imgs / "img0.png")], [str(imgs / "img1.jpg")]]
    assert digests() == before
    st = (imgs / "img1.jpg").stat()
    os.utime(imgs / "img1.jpg", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    after = digests()
    assert after[0] == before[0] and after[1][0] != before[1][0]
