"""Fault injection on the converted METEOR cache (``$CAPEVAL_CACHE/meteor-1.5/<fp>/``).

The cache is converted from a small stand-in jar and paraphrase table written here (same
formats as coco's), so that every damage-and-rebuild cycle costs milliseconds. The damage is
what a full disk, an interrupted copy or a hand edit leaves: a truncated word list, an edited
or empty ``small.json``, a truncated array, a missing manifest. Each must be detected and
converted again (the scores equal the clean ones), or refused with a named error; never read.
"""
from __future__ import annotations

import gzip
import json
import shutil
import zipfile

import numpy as np
import pytest

import capeval
from capeval.errors import ResourceDamaged
from capeval.metrics._meteor_native import convert as C
from capeval.metrics._meteor_native import manifest, resources
from capeval.progress import noting

SYNSETS = "\n".join(["dog", "1", "hound", "1", "car", "2 5", "automobile", "2", "big", "3", "large", "3",
                     "runs", "4", "sprints", "4"]) + "\n"
TABLE = [("0.5", "big car", "large automobile"), ("0.25", "a dog", "the hound"),
         ("0.1", "is running", "runs"), ("0.2", "on the grass", "on grass")]
CANDS = ["a hound sprints on grass", "the large automobile is red", "a dog runs"]
REFS = [["a dog runs on the grass", "the dog is running"], ["the big car is red"], ["a hound sprints"]]


def _write_jar(folder, synsets=SYNSETS, table=TABLE):
    folder.mkdir(parents=True, exist_ok=True)
    jar = folder / "meteor-1.5.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("function/english.words", "a\nthe\non\nis\n")
        z.writestr("nonbreaking/english.prefixes", "# prefixes\nMr\nDr\n")
        z.writestr("synonym/english.exceptions", "run\nran\n")
        z.writestr("synonym/english.synsets", synsets)
    (folder / "data").mkdir(exist_ok=True)
    with gzip.open(folder / "data" / "paraphrase-en.gz", "wb") as f:
        f.write("".join(f"{p}\n{r}\n{q}\n" for p, r, q in table).encode("utf-8"))
    return jar


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A stand-in jar, an empty cache root, and no resources loaded in this process."""
    jar = _write_jar(tmp_path / "jar")
    monkeypatch.setenv("CAPEVAL_METEOR_JAR", str(jar))
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(resources, "_loaded", {})
    return jar


def _fresh_process(monkeypatch):
    """What a new process sees: nothing loaded or verified yet."""
    monkeypatch.setattr(resources, "_loaded", {})


def _cache_dir(jar):
    dirs = [d for d in (jar.parents[1] / "cache" / "meteor-1.5").iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _meteor():
    res = capeval.score(CANDS, REFS, metrics=["meteor"])
    return res.per_caption["meteor"].tolist(), res.corpus["meteor"], res.signatures["meteor"]


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit_small(path):
    small = json.loads(path.read_text())
    small["function_words"] = small["function_words"][1:]  # "a" now counts as a content word
    path.write_text(json.dumps(small))


DAMAGE = {
    "truncated syn_words.txt": lambda d: _truncate(d / "syn_words.txt"),
    "edited small.json": lambda d: _edit_small(d / "small.json"),
    "empty small.json": lambda d: (d / "small.json").write_bytes(b""),
    "truncated .npy": lambda d: _truncate(d / "para_phrase_tokens.npy"),
    "truncated small .npy": lambda d: _truncate(d / "syn_offsets.npy"),
    "missing file": lambda d: (d / "para_vocab.txt").unlink(),
    "no manifest": lambda d: (d / manifest.MANIFEST).unlink(),
    "garbled manifest": lambda d: (d / manifest.MANIFEST).write_text("{not json"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_cache_is_converted_again_and_scores_stay(env, monkeypatch, damage):
    clean = _meteor()
    d = _cache_dir(env)
    want = {f.name: f.read_bytes() for f in d.iterdir()}
    DAMAGE[damage](d)
    _fresh_process(monkeypatch)
    notes: list[str] = []
    with noting(notes.append):
        assert _meteor() == clean
    assert any("damaged" in n and "converting the METEOR paraphrase table" in n for n in notes), notes
    assert {f.name: f.read_bytes() for f in d.iterdir()} == want  # repaired in place


def test_the_damage_changes_numbers_when_read_unchecked(env, monkeypatch):
    """The faults above are not harmless: read past the checks, they change METEOR."""
    clean = _meteor()
    d = _cache_dir(env)
    _edit_small(d / "small.json")
    monkeypatch.setattr(manifest, "verify", lambda directory, required: "unchecked")
    _fresh_process(monkeypatch)
    assert _meteor()[:2] != clean[:2]


def test_truncated_array_is_never_a_raw_value_error(env, monkeypatch):
    """Even with a manifest that vouches for the damaged file (written over it), the load
    fails as damage, and the conversion runs again."""
    clean = _meteor()
    d = _cache_dir(env)
    _truncate(d / "syn_ids.npy")
    (d / "small.json").write_bytes(b"")
    manifest.write(d)
    _fresh_process(monkeypatch)
    assert _meteor() == clean
    _fresh_process(monkeypatch)
    resources.load()  # the repaired directory loads without another conversion
    assert manifest.verify(d, resources.FILES)


def test_damage_that_cannot_be_repaired_is_a_named_error(env, monkeypatch):
    _meteor()
    d = _cache_dir(env)
    _truncate(d / "syn_words.txt")
    _fresh_process(monkeypatch)

    def readonly(*a, **k):
        raise PermissionError(13, "Permission denied", str(d))

    monkeypatch.setattr(resources, "convert", readonly)
    with pytest.raises(ResourceDamaged, match="syn_words.txt"):
        capeval.score(CANDS, REFS, metrics=["meteor"])


def test_first_conversion_says_what_it_does_once(env, monkeypatch):
    notes: list[str] = []
    with noting(notes.append):
        resources.load()
    assert notes == [resources.CONVERTING]
    _fresh_process(monkeypatch)
    with noting(notes.append):
        resources.load()
    assert notes == [resources.CONVERTING]  # warm: nothing to say


def test_venvs_share_one_conversion_by_content(env, tmp_path, monkeypatch):
    """Another install path with the same jar and table reads the same directory; a different
    table gets its own."""
    first = resources.load()
    other = _write_jar(tmp_path / "venv2" / "site-packages")
    monkeypatch.setenv("CAPEVAL_METEOR_JAR", str(other))
    monkeypatch.setattr(resources, "convert", lambda *a, **k: pytest.fail("converted again"))
    _fresh_process(monkeypatch)
    second = resources.load()
    assert second.identity == first.identity
    assert len(list((tmp_path / "cache" / "meteor-1.5").iterdir())) == 1
    monkeypatch.undo()
    third = _write_jar(tmp_path / "venv3", table=TABLE[:2])
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(resources, "_loaded", {})
    assert resources.load(third).identity["conversion"] != first.identity["conversion"]


def test_score_cache_key_names_the_conversion(env, tmp_path, monkeypatch):
    """A score computed from one conversion is never served for another: the meteor family's
    cache token is the manifest's digest (and the pow table's label)."""
    from capeval.metrics._meteor_native import powtable
    from capeval.metrics.meteor import Meteor
    from capeval.service.cache import ScoreCache
    from capeval.service.scoring import score_units

    cache = ScoreCache(tmp_path / "scores")
    clean = score_units(CANDS, REFS, ["meteor"], cache=cache)
    token = Meteor.cache_token({})
    assert token == f"meteor-native:{resources.load().identity['conversion'][:16]}:pow-{powtable.active().label}"
    assert Meteor.cache_token({"backend": "jar"}) is None
    # Another conversion with a valid manifest (as a changed converter would write): the
    # entry stored for the first one is not reused.
    d = _cache_dir(env)
    _edit_small(d / "small.json")
    manifest.write(d)
    _fresh_process(monkeypatch)
    assert Meteor.cache_token({}) != token
    again = score_units(CANDS, REFS, ["meteor"], cache=cache)
    assert again.details["cached"]["meteor"] is False
    assert again.per_caption["meteor"].tolist() != clean.per_caption["meteor"].tolist()


def test_manifest_verify_names_the_file(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    np.save(tmp_path / "b.npy", np.arange(10))
    digest = manifest.write(tmp_path)
    assert manifest.verify(tmp_path, ("a.txt", "b.npy")) == digest
    with pytest.raises(manifest.Damaged, match="lists no c.txt"):
        manifest.verify(tmp_path, ("c.txt",))
    (tmp_path / "a.txt").write_text("hellp")  # same size, other bytes
    with pytest.raises(manifest.Damaged, match="a.txt differs"):
        manifest.verify(tmp_path, ())
    shutil.copy(tmp_path / "b.npy", tmp_path / "a.txt")
    with pytest.raises(manifest.Damaged, match="a.txt has"):
        manifest.verify(tmp_path, ())


def test_cli_says_it_is_converting(env, tmp_path):
    from typer.testing import CliRunner

    from capeval.cli.main import app

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": str(i), "candidate": c, "references": r}) + "\n"
                            for i, (c, r) in enumerate(zip(CANDS, REFS))), encoding="utf-8")
    res = CliRunner().invoke(app, ["score", "--input", str(rows), "-m", "meteor"])
    assert res.exit_code == 0, res.output
    assert resources.CONVERTING in res.output


def test_concurrent_conversions_leave_one_checked_directory(env, tmp_path):
    """Conversions racing for one target (threads here; processes rename alike): every one
    ends, the directory in place passes its checks, and a conversion reports its own digest
    only when its directory is the one in place (the others' callers check that one)."""
    import threading

    jar, para = resources.locate()
    target = tmp_path / "cache" / "meteor-1.5" / resources.fingerprint(jar, para)
    target.parent.mkdir(parents=True)
    barrier = threading.Barrier(4)
    got: list = []

    def run():
        barrier.wait()
        got.append(C.convert(jar, para, target, jar_sha256="j", paraphrase_sha256="p"))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    digest = manifest.verify(target, resources.FILES)
    assert got.count(digest) == 1 and got.count(None) == 3
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary left
