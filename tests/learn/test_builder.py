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
