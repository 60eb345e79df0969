"""SQuAD answer normalisation and token F1."""
from capeval.qace.similarity import normalize_answer, token_f1


def test_normalize_drops_articles_punctuation_case():
    assert normalize_answer("The  Black, dog!") == "black dog"
    assert normalize_answer("an apple a day") == "apple day"


def test_token_f1_values():
    assert token_f1("black dog", "black dog") == 1.0
    # one of two candidate tokens in a three-token answer: P=1/2, R=1/3 -> F=0.4
    assert abs(token_f1("black dog", "two black cats") - 0.4) < 1e-12
    assert token_f1("dog", "cat") == 0.0
    # multiset overlap: a repeated token counts once per occurrence
    assert abs(token_f1("dog dog", "dog") - 2 * 0.5 * 1 / 1.5) < 1e-12


def test_token_f1_empty_rules():
    assert token_f1("", "") == 1.0
    assert token_f1("the", "") == 1.0  # both normalise to empty
    assert token_f1("dog", "") == 0.0
    assert token_f1("", "dog") == 0.0
