"""Every family streams (issue 34's acceptance): ``capeval score --input rows.jsonl -m <every
family that runs here> --jobs 2 -o out.jsonl``, the same with ``--engine ray``, and a run killed
with SIGKILL and resumed write the in-memory run's bytes, rows and signatures.

The one family that does not stream is named with its reason in :data:`NOT_STREAMED`; a new
family that does not stream fails :func:`test_every_family_streams_or_says_why` until it is
listed there. CLIP-S and PAC-S run on a tiny random CLIP built here (no CLIP weights exist on
this machine); BERTScore runs without bert_score's padding floor, which depends on the rows
sharing a padded batch and so cannot stream (docs/SCALE.md).
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

from capeval.inputs import write_result
from capeval.metrics import registry
from tests._needs import family_needs

from ._rows import make_rows, write_jsonl

#: family -> why it is scored in memory only
NOT_STREAMED = {
    "qace_img": "its Visual-T5 reader and question generator run padded batches, so a row's numbers depend on "
                "the rows batched with it",
    "pairjudge": "it judges pairs, whose two members sit in the two halves of the input",
}
#: options that make a family stream (where its defaults do not) or keep it small here
OPTIONS: dict[str, dict] = {
    "bertscore": {"padding_floor": False, "model": "minilm"},
    "learned": {"model": "mpnet"},
}
IMAGE_FAMILIES = ("clip_s", "pac_s", "polos")
#: model judges run on tiny random models built in the setup (no judge has a default)
JUDGE_FAMILIES = ("clair", "fleur", "reffleur")


def _streamed_families() -> list[str]:
    registry.load_plugins()
    return sorted(f for f in registry.BUILTIN_FAMILIES if f not in NOT_STREAMED)


def test_every_family_streams_or_says_why():
    for fam in registry.BUILTIN_FAMILIES:
        cls = registry.get_family(fam)
        why = cls.cannot_stream(OPTIONS.get(fam, {}))
        if fam in NOT_STREAMED:
            assert why is not None, f"{fam} streams now: remove it from NOT_STREAMED"
        else:
            assert why is None, f"{fam} does not stream with {OPTIONS.get(fam, {})}: {why}"


def _needs():
    out: set[str] = set()
    for fam in _streamed_families():
        if fam not in IMAGE_FAMILIES + JUDGE_FAMILIES:
            out.update(family_needs(registry.get_family(fam)))
    out.add("model:encoder-mpnet-base")  # the learned model of OPTIONS
    return sorted(out)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    for mod in ("torch", "transformers", "PIL", "ftfy"):
        pytest.importorskip(mod)
    from tests.metrics._tiny_clip import build_hf, save_openai, synthetic_images

    root = tmp_path_factory.mktemp("every")
    model, merges = build_hf(root / "hf")
    images = root / "images"
    files = synthetic_images(images)
    options = {fam: dict(o) for fam, o in OPTIONS.items()}
    # No embeddings kept on disk: the run must not write the tiny model's into the user's cache.
    options["clip_s"] = {"model": str(save_openai(model, root / "tiny.pt")), "tokenizer": str(merges),
                         "embedding_cache": False}
    options["pac_s"] = {"model": str(save_openai(model, root / "pacs.pth", wrap=True)), "tokenizer": str(merges),
                        "embedding_cache": False}
    from tests.metrics._tiny_polos import build as build_polos

    polos = build_polos(root / "polos")
    options["polos"] = {"checkpoint": str(polos["checkpoint"]), "clip_tokenizer": str(polos["merges"])}
    from tests.judges._tiny import build_causal, build_llava

    options["clair"] = {"model": str(build_causal(root / "judge")), "cache": False, "max_tokens": 24}
    llava = str(build_llava(root / "llava"))
    options["fleur"] = options["reffleur"] = {"model": llava, "cache": False}
    rng = random.Random(34)
    rows = make_rows(21, seed=34)
    for r in rows:
        r["image"] = rng.choice(files).name
    src = root / "in.jsonl"
    write_jsonl(src, rows)
    names = [o.name for fam in _streamed_families() for o in registry.get_family(fam).outputs]
    # the in-memory run of `capeval score -i in.jsonl --images DIR -m ... -o mem.jsonl`
    import capeval
    from capeval.cli.score import _read_with_images

    ids, cands, refs, paths = _read_with_images(src, None, images, names)
    mem = capeval.score(cands, refs, names, ids=ids, images=paths, options=options)
    write_result(mem, root / "mem.jsonl", ids)
    return {"root": root, "src": src, "images": images, "names": names, "options": options}


def _args(s, out: Path, *extra: str) -> list[str]:
    opts = [a for fam, o in s["options"].items() for k, v in o.items()
            for a in ("-O", f"{fam}.{k}={v if isinstance(v, str) else json.dumps(v)}")]
    return ["score", "-i", str(s["src"]), "--images", str(s["images"]), "-m", ",".join(s["names"]), "-o", str(out),
            "-q", *opts, *extra]


def _cli(args, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "from capeval.cli.main import main; main()", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _same_bytes(s, out: Path) -> None:
    mem = s["root"] / "mem.jsonl"
    assert out.read_bytes() == mem.read_bytes()
    assert out.with_name(out.stem + ".signatures.json").read_bytes() == \
        mem.with_name("mem.signatures.json").read_bytes()


@pytest.mark.slow
@pytest.mark.needs(*_needs())
@pytest.mark.parametrize("engine", ["jobs", "ray", "killed"])
def test_every_family_streamed_equals_in_memory(setup, tmp_path, engine):
    env = dict(os.environ)
    out = tmp_path / f"{engine}.jsonl"
    if engine == "jobs":
        proc = _cli(_args(setup, out, "--jobs", "2", "--chunk-size", "8"), env)
    elif engine == "ray":
        pytest.importorskip("ray")
        proc = _cli(_args(setup, out, "--engine", "ray", "--jobs", "2", "--chunk-size", "8"), env)
    else:
        run_dir = out.with_name(out.name + ".capeval-run")
        proc = _cli(_args(setup, out, "--chunk-size", "3"), env)
        deadline = time.time() + 900
        while time.time() < deadline and proc.poll() is None:
            if run_dir.exists() and len(list(run_dir.glob("chunk-*.bin"))) >= 2:
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not out.exists(), "the run finished before it could be killed"
        done = len(list(run_dir.glob("chunk-*.bin")))
        assert 2 <= done < 7, done
        proc = _cli(_args(setup, out, "--chunk-size", "3"), env)
    rc = proc.wait(timeout=1800)
    assert rc == 0, proc.stderr.read().decode()
    _same_bytes(setup, out)
