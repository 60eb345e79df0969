import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn.builder import (HUMAN, MACHINE, build_training_set, canonical_image, machine_style,
                                   split_by_image)


@pytest.mark.parametrize("name,kind,expect", [
    ("COCO_val2014_000000391895.jpg", None, "coco:391895"),
    ("coco/COCO_val2014_000000000042.jpg", "coco", "coco:42"),
    ("1000268201_693b08cb0e.jpg", None, "flickr:1000268201"),
    ("1000268201.jpg", "flickr", "flickr:1000268201"),  # the same photo in Flickr30k
    ("1056338697_4f7d7ce270", "flickr", "flickr:1056338697"),
    ("flickr8k/3482974845_db4f16befa.jpg", "flickr", "flickr:3482974845"),
    ("2258277193_586949ec62.jpg.1", None, "flickr:2258277193"),
    ("2008_005747.jpg", None, "voc:2008_005747"),
])
def test_canonical_image(name, kind, expect):
    assert canonical_image(name, kind) == expect


def test_canonical_image_errors():
    with pytest.raises(InputError, match="cannot read an image id"):
        canonical_image("holiday.png")
    with pytest.raises(InputError, match="unknown image kind"):
        canonical_image("1.jpg", "imagenet")


def test_machine_style():
    assert machine_style("A man, riding a Bike .") == "a man, riding a bike"
    assert machine_style("Two dogs ' play \" here !") == "two dogs play here"


def _pool():
    humans = [f"Human caption number {k} of IMG ." for k in range(5)]
    machines = {f"{a}_{r}": f"a machine caption {a}" for a in ("init", "pre", "par", "merge") for r in (1, 2, 3)}
    machines["init_1"] = "human caption number 2 of img"  # equals a human caption: never a machine row
    pool = [(f"COCO_val2014_{i:012d}.jpg", "coco", [h.replace("IMG", str(i)) for h in humans], dict(machines))
            for i in range(1, 7)]
    pool.append(("123_abcdef0123.jpg", "flickr8k", humans, dict(machines)))
    return pool


def test_pairing_rule():
    ts = build_training_set(_pool(), {"flickr:123"}, seed=3)
    assert ts.info["images"] == 6 and ts.info["excluded_images"] == 1
    assert len(ts) == 36 and int(ts.labels.sum()) == 18
    assert "flickr:123" not in ts.images
    pool = {canonical_image(p[0]): p for p in _pool()}
    for i in range(0, len(ts), 2):
        h, m = i, i + 1
        assert ts.labels[h] == HUMAN and ts.labels[m] == MACHINE
        k = int(ts.sources[h].split(":")[1])
        humans = pool[ts.images[h]][2]
        assert ts.candidates[h] == machine_style(humans[k])
        assert ts.references[h] == [x for j, x in enumerate(humans) if j != k]  # never itself, 4 refs
        assert ts.references[m] == ts.references[h]  # the machine twin shares them
        assert ts.candidates[m] not in {machine_style(x) for x in humans}
    for img in set(ts.images):
        machine = [c for c, lab, im in zip(ts.candidates, ts.labels, ts.images) if im == img and lab == MACHINE]
        assert len(set(machine)) == 3


def test_selection_is_seeded_and_stable_under_subsampling():
    a = build_training_set(_pool(), set(), seed=0)
    b = build_training_set(_pool(), set(), seed=0)
    assert a.candidates == b.candidates and a.sources == b.sources
    c = build_training_set(_pool(), set(), seed=1)
    assert a.sources != c.sources
    sub = build_training_set(_pool(), set(), seed=0, max_images=3)
    assert sub.info["images"] == 3
    for img in set(sub.images):
        assert [s for s, i in zip(sub.sources, sub.images) if i == img] == \
            [s for s, i in zip(a.sources, a.images) if i == img]


def test_builder_errors():
    with pytest.raises(InputError, match="every pool image is excluded"):
        build_training_set(_pool()[:1], {"coco:1"})
    short = [("COCO_val2014_000000000001.jpg", "coco", ["a", "b", "c"], {"x": "y"})]
    with pytest.raises(InputError, match="has 3 human captions"):
        build_training_set(short, set())


def test_split_holds_out_whole_images():
    images = [f"coco:{i // 6}" for i in range(600)]
    train, val = split_by_image(images, 0.1, seed=0)
    assert len(val) == 60 and not {images[i] for i in train} & {images[i] for i in val}
    assert np.array_equal(split_by_image(images, 0.1, seed=0)[1], val)


# ---- synthetic negatives --------------------------------------------------------------------

def _toy_parse(texts):
    """Every space-separated word a token; the listed words are NOUNs (the object-list rule
    reads only the universal POS)."""
    from capeval.data.distractor_tasks import Token

    nouns = {"caption", "number", "img", "dog", "ball", "park"}
    out = []
    for t in texts:
        pos, toks = 0, []
        for i, w in enumerate(t.split(" ")):
            toks.append(Token(w, pos, "NN", "NOUN" if w.lower().strip(".") in nouns else "X", "dep", 0, w.lower()))
            pos += len(w) + 1
        out.append(tuple(toks))
    return out


def test_negatives_are_machine_rows_on_the_slots_references():
    from capeval.data.distractor_tasks import object_list, shuffled

    plain = build_training_set(_pool(), {"flickr:123"}, seed=3)
    ts = build_training_set(_pool(), {"flickr:123"}, seed=3, negatives=("object-list", "shuffle"),
                            parse=_toy_parse)
    neg = [i for i, s in enumerate(ts.sources) if s.startswith("negative:")]
    assert len(neg) == 2 * 3 * 6 and ts.info["negative_rows"] == {"object-list": 18, "shuffle": 18}
    assert ts.info["negatives"] == ["object-list", "shuffle"] and ts.info["negative_slots"] == 3
    # the paper's rows are unchanged and in the same order; negatives only add rows
    keep = [i for i in range(len(ts)) if i not in set(neg)]
    assert [ts.candidates[i] for i in keep] == plain.candidates and [ts.sources[i] for i in keep] == plain.sources
    assert "negatives" not in plain.info
    pool = {canonical_image(p[0]): p for p in _pool()}
    for i in neg:
        _, kind, k = ts.sources[i].split(":")
        humans = pool[ts.images[i]][2]
        slot_refs = [x for j, x in enumerate(humans) if j != int(k)]
        assert ts.labels[i] == MACHINE and ts.references[i] == slot_refs  # the human twin's 4 references
        assert ts.images[i] != "flickr:123"  # built from training images only
        assert ts.candidates[i] not in {machine_style(h) for h in humans}
        if kind == "object-list":  # the distractor generator's rule, on the same references
            assert ts.candidates[i] == machine_style(object_list(_toy_parse(slot_refs)))
        else:
            assert sorted(ts.candidates[i].split()) == sorted(machine_style(humans[int(k)]).split())
    # seeded: the same call gives the same rows
    again = build_training_set(_pool(), {"flickr:123"}, seed=3, negatives=("object-list", "shuffle"),
                               parse=_toy_parse)
    assert again.candidates == ts.candidates
    assert shuffled(_toy_parse(["a b"])[0], np.random.default_rng(0)) is None  # under 3 tokens


def test_negative_slots_and_errors():
    ts = build_training_set(_pool(), set(), negatives=("object-list",), negative_slots=1, parse=_toy_parse)
    srcs = [s for s in ts.sources if s.startswith("negative:")]
    assert srcs == ["negative:object-list:0"] * 7 and ts.info["negative_slots"] == 1
    with pytest.raises(InputError, match="unknown synthetic negative 'typo'"):
        build_training_set(_pool(), set(), negatives=("typo",), parse=_toy_parse)
    with pytest.raises(InputError, match="need a parser"):
        build_training_set(_pool(), set(), negatives=("shuffle",))
    with pytest.raises(InputError, match="negative_slots must be in 0..3"):
        build_training_set(_pool(), set(), negatives=("shuffle",), negative_slots=4, parse=_toy_parse)
    with pytest.raises(InputError, match="negative_slots given without negatives"):
        build_training_set(_pool(), set(), negative_slots=1)
    with pytest.raises(InputError, match="parse returned 0 parses"):
        build_training_set(_pool(), set(), negatives=("shuffle",), parse=lambda texts: [])
