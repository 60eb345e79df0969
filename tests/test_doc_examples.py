"""Every code block in README.md, CONTRIBUTING.md and docs/*.md runs as written.

```python blocks run in a fresh namespace: nothing is supplied but what the comments just above
the block declare. ``<!-- example: needs (model:wordnet, extra:semantic) -->`` names what it
needs beyond ``pip install -e '.[test]'`` (tests/_needs.py; unmet, it is skipped at collection,
and a ``ResourceNotFound`` it raises anyway fails); ``<!-- example: files (my.npz, photos/a.jpg) -->``
names the user's files it reads (the test puts stand-ins in the working folder);
``<!-- example: given (model, images) -->`` names Python objects of the user's that the text
around the block describes (the test supplies small stand-ins); ``<!-- example: own process
(why) -->`` runs it in a fresh interpreter (it changes the process for what runs after it);
``<!-- example: skip (why) -->`` skips it with that reason. A comment ``# -> value`` at the end of
a line is checked: the expression before it must equal the value.

```bash blocks are command lines: every ``capeval`` command in them must name commands and options
the CLI has (parsed by the CLI's own parser, not run: most read the user's data), every
``python folder/name.py`` a script of the repository, and no line may use ``[optional]`` or ``a|b``
notation, which a shell would not run as written.
"""
from __future__ import annotations

import ast
import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*example:\s*(skip|own process|needs|files|given)\s*\((.+)\)\s*-->")


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
                needs = _listed(marks, "needs")
                declared = {"files": _listed(marks, "files"), "given": _listed(marks, "given")}
                yield pytest.param("\n".join(lines[start:j]), marks.get("skip"), "own process" in marks, declared,
                                   id=f"{path.relative_to(ROOT)}:{start + 1}",
                                   marks=[pytest.mark.needs(*needs)] if needs else [])
                i = j
            i += 1


def _listed(marks: dict[str, str], kind: str) -> list[str]:
    return [n.strip() for n in marks.get(kind, "").split(",") if n.strip()]


CANDS = ["a dog runs on the grass", "two cats sleep on a sofa", "a man rides a red bike"]
REFS = [["a dog is running on grass", "the dog runs in a field"],
        ["two cats are sleeping", "cats asleep on a couch"],
        ["a man riding a bicycle", "a person on a red bike in the street"]]


def _namespace(tmp_path: Path, declared: dict[str, list[str]]) -> dict:
    """Stand-ins for what the block declares, and nothing else."""
    given: dict = {}
    if declared["given"]:
        given.update(_tiny_captioner())
    missing = [n for n in declared["given"] if n not in given]
    assert not missing, f"no stand-in for the declared names {missing}"
    for name in declared["files"]:
        _stand_in_file(tmp_path, name)
    return {n: given[n] for n in declared["given"]}


def _stand_in_file(tmp_path: Path, name: str) -> None:
    if name == "my.npz":
        # a model file of the user's: the shipped NNEval model stands in for it
        from capeval.learn.configs import default_model_path

        shutil.copy(default_model_path(), tmp_path / "my.npz")
        return
    built = _tiny_clip_dir()
    if built is None:
        pytest.skip(f"no stand-in for {name} (torch/transformers/Pillow not importable)")
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if name == "openai/clip-vit-base-patch32":
        # a tiny random CLIPModel stands in for the user's cached openai/clip-vit-base-patch32
        target.symlink_to(built / "clip", target_is_directory=True)
    elif name.startswith("photos/"):
        pictures = sorted((built / "photos").iterdir())
        target.symlink_to(pictures[sum(map(ord, name)) % len(pictures)])
    else:
        raise AssertionError(f"no stand-in for the declared file {name}")


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


@pytest.mark.parametrize(("source", "skip", "own_process", "declared"), list(_examples()))
def test_example_runs(source, skip, own_process, declared, tmp_path, monkeypatch):
    if skip:
        pytest.skip(skip)
    monkeypatch.chdir(tmp_path)
    code = _checked(source)
    ast.parse(code)  # a syntax error is the doc's fault, reported as such
    namespace = _namespace(tmp_path, declared)
    if own_process:
        assert not declared["given"], "an own-process example cannot be given objects"
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return
    exec(compile(code, "<doc example>", "exec"), namespace)  # noqa: S102 - our own docs


def _shell_blocks():
    for path in FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() in ("```bash", "```sh", "```console"):
                j = i + 1
                while lines[j].strip() != "```":
                    j += 1
                yield pytest.param(lines[i + 1:j], id=f"{path.relative_to(ROOT)}:{i + 2}")
                i = j
            i += 1


def _commands(block: list[str]):
    """Each logical command of a shell block: comments dropped, continuations joined, split at && ; |."""
    import shlex

    text = "\n".join(block).replace("\\\n", " ")
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in lexer:
            if token in ("&&", "||", ";", "|", "&"):
                yield line, words, token
                words = []
            else:
                words.append(token)
        yield line, words, None


def _check_capeval(words: list[str]) -> None:
    import typer

    from capeval.cli.main import app

    # duck-typed: recent typer releases build on a click copy of their own
    command = typer.main.get_command(app)
    args = words[1:]
    while hasattr(command, "get_command") and args and not args[0].startswith("-"):
        sub = command.get_command(command.context_class(command), args[0])
        assert sub is not None, f"no command {args[0]!r} in {' '.join(words)!r}"
        command, args = sub, args[1:]
    if args in (["--help"], ["--version"]):
        return
    parser = command.make_parser(command.context_class(command, info_name=command.name))
    try:
        parser.parse_args(list(args))  # unknown options and missing option values raise here
    except Exception as e:  # click's UsageError family
        if not hasattr(e, "format_message"):
            raise
        raise AssertionError(f"{' '.join(words)!r}: {e.format_message()}") from None


@pytest.mark.parametrize("block", list(_shell_blocks()))
def test_shell_block_is_what_the_cli_takes(block):
    pytest.importorskip("typer")
    for line, words, joiner in _commands(block):
        code = line.split(" #")[0]
        assert not re.search(r"\s\[-", code), f"optional-argument notation in {line!r}: write it out or comment it"
        if joiner == "|" and words and words[0] == "python":
            raise AssertionError(f"{line!r}: 'a|b' alternatives are not shell")
        if not words or "=" in words[0] and not words[0].startswith("-"):
            continue
        if words[0] == "capeval":
            _check_capeval(words)
        elif words[0] in ("python", "python3") and len(words) > 1 and words[1].endswith(".py") and "/" in words[1]:
            assert (ROOT / words[1]).is_file(), f"{line!r}: no script {words[1]}"


def test_the_collector_finds_the_examples():
    ids = [p.id for p in _examples()]
    assert any(i.startswith("README.md:") for i in ids) and len(ids) >= 8, ids
    # The comments above an example are read: some example needs something, one runs alone.
    assert any(p.marks for p in _examples()) and any(p.values[2] for p in _examples())


def test_a_wrong_documented_value_fails():
    with pytest.raises(AssertionError):
        exec(_checked("x = 1\nx + 1  # -> 3"), {})  # noqa: S102


def test_an_undeclared_name_fails(tmp_path):
    # the examples are run as a reader copies them: a name the block does not define is an error
    with pytest.raises(NameError):
        exec(_checked("capeval_score = len(cands)"), _namespace(tmp_path, {"files": [], "given": []}))  # noqa: S102


def test_a_shell_line_with_an_unknown_option_fails():
    with pytest.raises(AssertionError, match="(?i)no such option"):
        test_shell_block_is_what_the_cli_takes(["capeval score --input x.jsonl --no-such-flag"])
    with pytest.raises(AssertionError, match="optional-argument"):
        test_shell_block_is_what_the_cli_takes(["capeval score --input x.jsonl [--jobs N]"])
