"""WordNetFiles answers SPICE-py's three WordNet questions exactly as NLTK's reader does."""
from __future__ import annotations

import pytest

from capeval.resources import wordnet as wnres
from tests._needs import WORDNET

pytestmark = pytest.mark.needs(*WORDNET)

# Inflections, exceptions, satellites, collocations, capitals, non-words, empty.
WORDS = ["dog", "dogs", "riding", "rides", "ride", "rid", "geese", "mice", "wooded", "woode",
         "outstretched", "better", "best", "red", "large", "sit_on", "ride on", "next to", "Dog",
         "running", "ran", "is", "be", "are", "men", "women", "sitting", "hopping", "hoping",
         "glasses", "boxes", "tennis", "court", "xyzzy", "a", "the", "", " ", "2", "t-shirt",
         "grey", "blue", "ate", "eating", "lying", "lies", "skis", "skiing", "frisbee", "ball",
         "awake", "asleep", "alive", "aloft", "stained", "broken", "skier's", "o'clock"]


@pytest.fixture(scope="module")
def both():
    nltk_reader = wnres.load_wordnet()
    from capeval.scenegraph.wnfacts import WordNetFiles

    return WordNetFiles(wnres.prepare_nltk_data() / "corpora" / "wordnet"), nltk_reader


def _sample(reader) -> list[str]:
    lemmas = sorted(reader._reader._lemma_pos_offset_map)
    words = lemmas[::61]
    # Inflected forms reach morphology and the exception lists.
    words += [w + suffix for w in lemmas[::997] for suffix in ("s", "es", "ed", "ing", "er", "est")]
    exceptions = sorted(reader._reader._exception_map["v"]) + sorted(reader._reader._exception_map["n"])
    return words + exceptions[::7] + WORDS


def test_facts_equal_nltks_answers(both):
    from capeval.scenegraph.lexicon import reader_facts

    files, nltk_reader = both
    words = _sample(nltk_reader)
    assert len(words) > 3000
    for w in words:
        assert files.facts(w) == reader_facts(nltk_reader, w), w


def test_satellite_and_sense_numbers(both):
    files, _ = both
    assert "dog.n.01" in files.facts("dog")[2]
    assert any(n.endswith(".s.01") or ".s." in n for n in files.facts("red")[2])
    assert files.facts("riding")[0] is False and files.facts("ride")[0] is True
    assert files.facts("xyzzy") == (False, False, frozenset())
