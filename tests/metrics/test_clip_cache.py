"""The CLIP image-embedding cache heals itself (issue 33, item 6): a shard with one flipped byte,
or rewritten as a valid file holding other values, is dropped with a warning and its images are
embedded again, giving the numbers of an uncached run; the image door refuses bombs by name."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
pytest.importorskip("ftfy")

from capeval.errors import InputError
from capeval.metrics import _clip_models
from capeval.metrics._clip_cache import CacheDamaged, load_shards, shard_bytes
from capeval.metrics.clipscore import ClipScore

from ._tiny_clip import build_hf, save_openai, synthetic_images


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tinyclip")
    model, merges = build_hf(root / "hf")
    return {"pt": save_openai(model, root / "tiny.pt"), "merges": merges,
            "images": [str(p) for p in synthetic_images(root / "img")]}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    _clip_models._memory.clear()


def _run(tiny):
    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    n = len(tiny["images"])
    return m.compute(["a dog runs"] * n, [["a dog"]] * n, images=tiny["images"])


def _only_shard(tmp_path):
    shards = list((tmp_path / "cache" / "clip-image-embeddings").glob("*/*.npz"))
    assert len(shards) == 1, shards
    return shards[0]


def _flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _other_values(path):
    with np.load(path) as z:
        keys, emb = z["sha256"], z["emb"]
    path.write_bytes(shard_bytes(dict(zip(keys.tolist(), emb * 0 + 1)))[1])  # valid, other values, same name


@pytest.mark.parametrize("damage", [_flip, _other_values], ids=["flipped byte", "other values"])
def test_a_damaged_shard_is_dropped_and_recomputed(tiny, tmp_path, damage):
    clean = _run(tiny)
    shard = _only_shard(tmp_path)
    damage(shard)
    _clip_models._memory.clear()  # a new process: only the disk shards remain
    with pytest.warns(CacheDamaged, match=shard.name):
        again = _run(tiny)
    assert again.details["images"]["embedded"] == len(set(tiny["images"]))
    np.testing.assert_array_equal(again.per_caption["clip_s"], clean.per_caption["clip_s"])
    healed = _only_shard(tmp_path)  # the damaged shard gone, a good one written
    _clip_models._memory.clear()
    third = _run(tiny)
    assert third.details["images"]["embedded"] == 0
    np.testing.assert_array_equal(third.per_caption["clip_s"], clean.per_caption["clip_s"])
    assert healed.exists()


def _second_shard(shard, listed: bool):
    """A self-consistently named shard beside ``shard``, with its keys and other values, that
    sorts after it; ``listed``: its line appended to the manifest too."""
    with np.load(shard) as z:
        keys, emb = z["sha256"], z["emb"]
    name, data = shard_bytes(dict(zip(keys.tolist(), emb * 0 + 1)))
    planted = shard.parent / ("f" * 32 + ".npz") if not listed else shard.parent / name
    planted.write_bytes(data)
    if listed:
        with open(shard.parent / "manifest.jsonl", "a") as f:
            f.write('{"entry": "%s"}\n' % name)
    return planted


@pytest.mark.parametrize("listed", [False, True], ids=["foreign", "listed duplicate"])
def test_a_second_shard_with_the_same_images_never_overrides(tiny, tmp_path, listed):
    """Issue 41, item 5: a second shard holding the same image keys with other values used to
    win because it sorted later (CLIP-S 0.01416 -> 0.05508, same signature). A shard the
    manifest does not list is foreign; two listed shards that disagree are both dropped."""
    clean = _run(tiny)
    shard = _only_shard(tmp_path)
    planted = _second_shard(shard, listed)
    _clip_models._memory.clear()
    with pytest.warns(CacheDamaged) as notes:
        again = _run(tiny)
    assert any(planted.name in str(w.message) for w in notes), [str(w.message) for w in notes]
    np.testing.assert_array_equal(again.per_caption["clip_s"], clean.per_caption["clip_s"])
    assert not planted.exists()
    assert again.details["images"]["embedded"] == (len(set(tiny["images"])) if listed else 0)
    _clip_models._memory.clear()
    assert _run(tiny).details["images"]["embedded"] == 0  # healed: one good shard, listed


def test_shards_of_older_versions_without_a_manifest_are_dropped(tmp_path):
    name, data = shard_bytes({"ab" * 32: np.ones(4, np.float32)})
    (tmp_path / name).write_bytes(data)
    with pytest.warns(CacheDamaged, match="not in its cache's manifest"):
        assert load_shards(tmp_path) == {}
    assert not (tmp_path / name).exists()


def test_an_image_bomb_is_refused_by_name_before_decoding(tiny, tmp_path):
    from PIL import Image

    wide = tmp_path / "wide.png"
    Image.new("L", (10_000, 1)).save(wide)  # 1x10000 would take 2.5 GB in the resize
    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    with pytest.raises(InputError, match=r"wide.png.*10000x1 pixels.*longer than it is wide"):
        m.compute(["a dog"], [["a dog"]], images=[str(wide)])
