"""Distractor generation rules (capeval.data.distractor_tasks) on hand-written parses and the
same rules on real spaCy parses."""
from __future__ import annotations

import pytest

from capeval.data import distractor_tasks as D
from capeval.errors import InputError
from tests._needs import SPACY, requires


def P(caption: str, spec: str) -> D.Parse:
    """Parse of a space-tokenised caption from 'TAG/POS/dep/head' per token (head = index;
    lemma = lower-cased text)."""
    words = caption.split(" ")
    fields = spec.split()
    assert len(words) == len(fields), (words, fields)
    out, pos = [], 0
    for w, f in zip(words, fields):
        tag, upos, dep, head = f.split("/")
        out.append(D.Token(w, pos, tag, upos, dep, int(head), w.lower()))
        pos += len(w) + 1
    return tuple(out)


# Hand-checked parses in spaCy's scheme; head indices are 0-based, a root points to itself.
PARSES = {
    "A young man is riding a bike on the beach .":
        "DT/DET/det/2 JJ/ADJ/amod/2 NN/NOUN/nsubj/4 VBZ/AUX/aux/4 VBG/VERB/ROOT/4 DT/DET/det/6 "
        "NN/NOUN/dobj/4 IN/ADP/prep/4 DT/DET/det/9 NN/NOUN/pobj/7 ./PUNCT/punct/4",
    "A girl in a pink dress in the park .":
        "DT/DET/det/1 NN/NOUN/ROOT/1 IN/ADP/prep/1 DT/DET/det/5 JJ/ADJ/amod/5 NN/NOUN/pobj/2 "
        "IN/ADP/prep/1 DT/DET/det/8 NN/NOUN/pobj/6 ./PUNCT/punct/1",
    "Two women sit in front of a building .":
        "CD/NUM/nummod/1 NNS/NOUN/nsubj/2 VBP/VERB/ROOT/2 IN/ADP/prep/2 NN/NOUN/pobj/3 IN/ADP/prep/4 "
        "DT/DET/det/7 NN/NOUN/pobj/5 ./PUNCT/punct/2",
    "A dog runs through the snow .":
        "DT/DET/det/1 NN/NOUN/nsubj/2 VBZ/VERB/ROOT/2 IN/ADP/prep/2 DT/DET/det/5 NN/NOUN/pobj/3 ./PUNCT/punct/2",
    "A man with a hat .":
        "DT/DET/det/1 NN/NOUN/ROOT/1 IN/ADP/prep/1 DT/DET/det/4 NN/NOUN/pobj/2 ./PUNCT/punct/1",
}


def parsed(text: str) -> D.Parse:
    return P(text, PARSES[text])


def test_person_np_is_the_subject_with_its_left_dependents():
    text = "A young man is riding a bike on the beach ."
    span = D.person_span(text, parsed(text))
    assert (span.start, span.end, span.key, span.noun) == (0, 3, "a young man", "man")


def test_verbless_caption_uses_the_root_noun_and_keeps_post_modifiers_out():
    text = "A girl in a pink dress in the park ."
    person = D.person_span(text, parsed(text))
    assert person.key == "a girl"
    scene = D.scene_span(text, parsed(text), person)
    # "in a pink dress" is a PP too, but "dress" is no scene noun
    assert (scene.key, scene.noun) == ("in the park", "park")


def test_scene_follows_relational_nouns_and_the_person_must_be_a_person():
    text = "Two women sit in front of a building ."
    scene = D.scene_span(text, parsed(text))
    assert (scene.key, scene.noun) == ("in front of a building", "building")
    assert D.person_span(text, parsed(text)).key == "two women"
    dog = "A dog runs through the snow ."
    assert D.person_span(dog, parsed(dog)) is None
    assert D.scene_span(dog, parsed(dog)).key == "through the snow"
    hat = "A man with a hat ."
    assert D.scene_span(hat, parsed(hat)) is None


# ---- generation on a toy corpus, with a parser built from templates --------------------------

PEOPLE = [("A man", "male-adult"), ("A woman", "female-adult"), ("A boy", "male-child"), ("A girl", "female-child"),
          ("A skier", None)]
ACTIONS = ["runs", "sits", "waits", "jumps", "stands"]
PLACES = ["on the beach", "in the park", "in the snow", "near the water", "on the street"]


def toy_parse(text: str) -> D.Parse:
    """Parses of 'DT NN VBZ IN DT NN .' captions and of the odd plain sentence."""
    words = text.split(" ")
    if len(words) == 7:
        return P(text, "DT/DET/det/1 NN/NOUN/nsubj/2 VBZ/VERB/ROOT/2 IN/ADP/prep/2 DT/DET/det/5 NN/NOUN/pobj/3 "
                       "./PUNCT/punct/2")
    return P(text, " ".join(["NN/NOUN/ROOT/0"] + ["NN/NOUN/dep/0"] * (len(words) - 1)))


def toy_images(n: int = 12) -> dict[str, list[str]]:
    images = {}
    for i in range(n):
        caps = []
        for k in range(5):
            who = PEOPLE[(i + (k > 2)) % len(PEOPLE)][0]
            caps.append(f"{who} {ACTIONS[(i + k) % 5]} {PLACES[(2 * i + (k > 3)) % 5]} .")
        images[f"img{i:02d}"] = caps
    return images


def counting_parser():
    calls = []

    def parse(texts):
        calls.append(list(texts))
        return [toy_parse(t) for t in texts]

    return parse, calls


def test_generate_invariants_for_every_task():
    images = toy_images()
    parse, calls = counting_parser()
    items = D.generate(images, parse, seed=7)
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0]))  # each distinct caption parsed once
    assert {it.task for it in items} == set(D.TASKS)
    for it in items:
        caps = images[it.image]
        assert it.correct == caps[it.caption_index]
        assert list(it.references) == caps[:it.caption_index] + caps[it.caption_index + 1:]
        assert it.correct not in it.references
        assert it.distractor != it.correct
        assert D._loose(it.distractor) not in {D._loose(c) for c in caps}
        assert it.donor != it.image
    seen = {(it.task, it.image) for it in items}
    assert len(seen) == len(items)  # at most one item per task and image


def test_replace_person_swaps_class_keeps_the_rest_and_never_names_a_mentioned_person():
    images = toy_images()
    items = D.generate(images, toy_parse_all, tasks=["replace-person"])
    assert items
    for it in items:
        old, new = it.correct.split(" ", 2), it.distractor.split(" ", 2)
        assert old[2] == new[2]  # only "A <noun>" changed
        cls = {w.split()[1].lower(): c for w, c in PEOPLE}
        assert cls[old[1]] is not None and cls[new[1]] not in (None, cls[old[1]])
        mentioned = {w.lower() for c in images[it.image] for w in c.split()}
        assert new[1].lower() not in mentioned


def toy_parse_all(texts):
    return [toy_parse(t) for t in texts]


def test_replace_scene_and_share_tasks():
    images = toy_images()
    items = D.generate(images, toy_parse_all, tasks=["replace-scene", "share-person", "share-scene"], seed=3)
    by_task = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)
    for it in by_task["replace-scene"]:
        assert it.correct.split(" ")[:3] == it.distractor.split(" ")[:3]
        assert it.correct.split(" ")[-2] != it.distractor.split(" ")[-2]
    for it in by_task["share-person"]:
        assert it.distractor in images[it.donor]
        assert it.distractor.split(" ")[:2] == it.correct.split(" ")[:2]
    for it in by_task["share-scene"]:
        assert it.distractor.split(" ")[3:6] == it.correct.split(" ")[3:6]


def test_just_shuffle_and_object_list():
    images = toy_images()
    items = D.generate(images, toy_parse_all, tasks=["just-person", "just-scene", "shuffle", "object-list"])
    # Every toy image has a person, a scene and nouns: one item per image and task.
    assert sorted(it.task for it in items) == sorted(["just-person", "just-scene", "shuffle", "object-list"] * len(images))
    for it in items:
        if it.task == "just-person":
            assert it.correct.startswith(it.distractor + " ")
        elif it.task == "just-scene":
            assert it.distractor.lower() in it.correct.lower() and it.distractor[0].isupper()
        elif it.task == "shuffle":
            assert sorted(it.distractor.split()) == sorted(it.correct.split())
            assert it.distractor.endswith(" .")
        else:
            nouns = [w.lower() for ref in it.references for w in ref.split()[1::4]]  # toy nouns: 2nd, 6th word
            assert it.distractor.split() == list(dict.fromkeys(nouns))


def test_object_list_and_shuffled_are_the_task_rules():
    """The pure rule functions (shared with the training negatives of capeval.learn.builder)
    give exactly the object-list and shuffle distractors."""
    items = D.generate(toy_images(), toy_parse_all, tasks=["shuffle", "object-list"], seed=5)
    assert {it.task for it in items} == {"shuffle", "object-list"}
    for it in items:
        if it.task == "object-list":
            assert D.object_list(toy_parse_all(list(it.references))) == it.distractor
        else:
            words = it.correct.split()[:-1]  # toy captions end in " ."
            assert sorted(it.distractor.split()[:-1]) == sorted(words) and it.distractor.split()[:-1] != words
    assert D.object_list([toy_parse("A man runs on the beach .")][:0]) is None  # no nouns: no item


def test_seeded_and_independent_of_other_images():
    images = toy_images()
    a = D.generate(images, toy_parse_all, seed=11)
    assert a == D.generate(images, toy_parse_all, seed=11)
    assert a != D.generate(images, toy_parse_all, seed=12)
    # donor-free tasks of one image do not depend on which other images are generated
    few = {k: images[k] for k in list(images)[:3]}
    own = ["just-person", "just-scene", "shuffle", "object-list"]
    sub = D.generate(few, toy_parse_all, tasks=own, seed=11)
    assert sub == [it for it in a if it.task in own and it.image in few]


def test_input_errors_name_the_item():
    with pytest.raises(InputError, match="unknown distractor task 'swap'"):
        D.generate(toy_images(2), toy_parse_all, tasks=["swap"])
    with pytest.raises(InputError, match="image 'x' has 1 caption"):
        D.generate({"x": ["A man runs on the beach ."]}, toy_parse_all)
    with pytest.raises(InputError, match="parse returned 0 parses"):
        D.generate(toy_images(2), lambda texts: [])


# ---- the rules on real spaCy parses ---------------------------------------------------------------

@pytest.fixture(scope="module")
@requires(*SPACY)
def spacy_parse():
    from capeval.data.distractors import SpacyParser

    parser = SpacyParser(cache=False)
    parser.nlp  # noqa: B018 - loads the pipeline here, not inside the first test
    return parser


@pytest.mark.parametrize("text, person, scene", [
    ("A young man is riding a bike on the beach .", "a young man", "on the beach"),
    ("Two little girls in pink dresses are playing in the park .", "two little girls", "in the park"),
    ("A woman in a red coat walks down the street .", "a woman", "down the street"),
    ("The boy is jumping into the pool .", "the boy", "into the pool"),
    ("A black dog runs through the snow .", None, "through the snow"),
    ("A man sits in front of a large building .", "a man", "in front of a large building"),
])
def test_rules_on_spacy_parses(spacy_parse, text, person, scene):
    (parse,) = spacy_parse([text])
    p = D.person_span(text, parse)
    s = D.scene_span(text, parse, p)
    assert (p.key if p else None) == person
    assert (s.key if s else None) == scene
