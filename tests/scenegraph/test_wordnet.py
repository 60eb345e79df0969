"""WordNet 3.0 through NLTK from a local database, and the synonym lookup built on it."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from capeval.errors import ResourceNotFound
from capeval.resources import wordnet as wnres


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
def wn():
    pytest.importorskip("nltk")
    try:
        return wnres.load_wordnet()
    except ResourceNotFound as exc:
        pytest.skip(str(exc))


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
    from capeval.resources.resolver import _package_dir

    jar = _package_dir("pycocoevalcap") / "spice" / "lib" / "Meteor-1.5.jar"
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
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    assert wnres.cache_root() == tmp_path
    monkeypatch.delenv("CAPEVAL_CACHE")
    assert wnres.cache_root() == Path(os.path.expanduser("~/.cache/capeval"))
