"""Every ```python example in README.md and docs/*.md runs as written.

The examples name a few inputs they leave to the reader (``cands``, ``refs``, ...); the test
supplies small ones. A comment ``# -> value`` at the end of a line is checked: the expression
before it must equal the value. Comments on the lines just above an example say more:
``<!-- example: needs (model:wordnet, extra:semantic) -->`` names what it needs beyond
``pip install -e '.[test]'`` (tests/_needs.py; unmet, it is skipped at collection, and a
``ResourceNotFound`` it raises anyway fails); ``<!-- example: own process (why) -->`` runs it
in a fresh interpreter (it changes the process for what runs after it);
``<!-- example: skip (why) -->`` skips it with that reason.
"""
from __future__ import annotations

import ast
import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*example:\s*(skip|own process|needs)\s*\((.+)\)\s*-->")


def _examples():
    for path in FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":
                start = i + 1
                j = start
                while lines[j].strip() != "```":
                    j += 1
                marks: dict[str, str] = {}
                k = i - 1
                while k >= 0 and (m := MARK.search(lines[k])):
                    marks[m.group(1)] = m.group(2)
                    k -= 1
                needs = [n.strip() for n in marks.get("needs", "").split(",") if n.strip()]
                yield pytest.param("\n".join(lines[start:j]), marks.get("skip"), "own process" in marks,
                                   id=f"{path.relative_to(ROOT)}:{start + 1}",
                                   marks=[pytest.mark.needs(*needs)] if needs else [])
                i = j
            i += 1


CANDS = ["a dog runs on the grass", "two cats sleep on a sofa", "a man rides a red bike"]
REFS = [["a dog is running on grass", "the dog runs in a field"],
        ["two cats are sleeping", "cats asleep on a couch"],
        ["a man riding a bicycle", "a person on a red bike in the street"]]


def _namespace(tmp_path: Path) -> dict:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": f"r{i}", "candidate": c, "references": r}) + "\n"
                            for i, (c, r) in enumerate(zip(CANDS, REFS))), encoding="utf-8")

    def my_generator():
        for i, (c, r) in enumerate(zip(CANDS, REFS)):
            yield f"g{i}", c, r

    ns = {"cands": CANDS, "refs": REFS, "train_refsets": REFS, "sampled_captions": CANDS,
          "batch_references": REFS, "my_generator": my_generator}
    # "my.npz": a model file of the user's; the shipped NNEval model stands in for it.
    from capeval.learn.configs import default_model_path

    shutil.copy(default_model_path(), tmp_path / "my.npz")
    ns.update(_tiny_captioner())
    _tiny_clip_files(tmp_path)
    return ns


@functools.lru_cache(maxsize=1)
def _tiny_clip_dir() -> Path | None:
    import tempfile

    import atexit

    folder = tempfile.mkdtemp(prefix="capeval-doc-clip-")
    atexit.register(shutil.rmtree, folder, True)
    try:
        from tests.metrics._tiny_clip import build_hf, synthetic_images

        build_hf(Path(folder) / "clip")
        synthetic_images(Path(folder) / "photos", sizes=((320, 240), (240, 320), (224, 224)))
    except ImportError:
        return None
    return Path(folder)


def _tiny_clip_files(tmp_path: Path) -> None:
    """The image example's files: a tiny random CLIPModel stands in for the user's cached
    openai/clip-vit-base-patch32 (a relative directory of that name is a local model), and
    synthetic pictures for their photos."""
    built = _tiny_clip_dir()
    if built is None:
        return
    (tmp_path / "openai").mkdir()
    (tmp_path / "openai" / "clip-vit-base-patch32").symlink_to(built / "clip", target_is_directory=True)
    (tmp_path / "photos").mkdir()
    for src, name in zip(sorted((built / "photos").iterdir()), ("dog.jpg", "cats.jpg", "bike.jpg")):
        (tmp_path / "photos" / name).symlink_to(src)


def _tiny_captioner() -> dict:
    """A small untrained PyTorch captioner for the pre-gen example (model(images, tokens, lengths) ->
    logits over the vocabulary at every position)."""
    try:
        import torch
    except ImportError:
        return {}
    vocab_size, start_id, end_id = 11, 0, 0

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(vocab_size, 8)
            self.img = torch.nn.Linear(4, 8)
            self.out = torch.nn.Linear(8, vocab_size)

        def forward(self, images, tokens, lengths=None):
            return self.out(torch.tanh(self.emb(tokens) + self.img(images)[:, None, :]))

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    images = list(torch.rand(4, 4, generator=g))
    reference_ids = [[[1, 2, 3], [4, 5]], [[6, 7, 8, 9]], [[2, 2], [10, 3, 1]], [[5]]]
    return {"model": Tiny().eval(), "vocab_size": vocab_size, "start_id": start_id, "end_id": end_id,
            "images": images, "reference_ids": reference_ids}


def _checked(source: str) -> str:
    """Turn ``expr  # -> value`` lines into assertions."""
    out = []
    for line in source.splitlines():
        code, sep, expected = line.partition("# -> ")
        if sep and code.strip():
            expected = expected.split("  (")[0].strip()  # a remark in parentheses may follow
            out.append(f"assert ({code.strip()}) == ({expected}), {code.strip()!r}")
        else:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize(("source", "skip", "own_process"), list(_examples()))
def test_example_runs(source, skip, own_process, tmp_path, monkeypatch):
    if skip:
        pytest.skip(skip)
    monkeypatch.chdir(tmp_path)
    code = _checked(source)
    ast.parse(code)  # a syntax error is the doc's fault, reported as such
    if own_process:
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return
    exec(compile(code, "<doc example>", "exec"), _namespace(tmp_path))  # noqa: S102 - our own docs


def test_the_collector_finds_the_examples():
    ids = [p.id for p in _examples()]
    assert any(i.startswith("README.md:") for i in ids) and len(ids) >= 8, ids
    # The comments above an example are read: some example needs something, one runs alone.
    assert any(p.marks for p in _examples()) and any(p.values[2] for p in _examples())


def test_a_wrong_documented_value_fails():
    with pytest.raises(AssertionError):
        exec(_checked("x = 1\nx + 1  # -> 3"), {})  # noqa: S102
