"""Polos on a tiny random checkpoint in the polos package's layout (``_tiny_polos``): against the
package itself (run by its own interpreter, scripts/make_polos_reference_venv.sh), and capeval's
own properties (range, NaN rows, batch and order independence, long text, refused files).

No real Polos weights exist here: the tiny checkpoint exercises the same code paths, and the
comparison is with the package's code on the same file.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
pytest.importorskip("yaml")
pytest.importorskip("ftfy")

from capeval.errors import InputError
from capeval.metrics._long_text import LongTextWarning
from capeval.metrics.polos import Polos
from tests._needs import polos_python

from . import _tiny_polos

CANDS = ["a dog runs on the grass", "two cats sleep in a sunny room", "a man rides a red bike down the street",
         "children play ball near the water", "a dog runs on the grass"]
REFS = [["a dog on grass", "the dog runs"], ["cats sleep"], ["a man on a bike", "red bike", "a street"],
        ["children near water", "two children play ball"], ["a dog on grass", "the dog runs"]]

#: Derived tolerance against the package (absolute, on scores in [0, 1]). Both sides compute in
#: float32 on the same weights; they differ only in how products are grouped: capeval runs every
#: forward pass in the torch runner's 8-row shape and CLIP's text tower on unpadded rows, the
#: package one caption at a time with rows padded to 77, so a float32 sum of n terms may round
#: differently by up to about sqrt(n) ulps per stage. The widest sum is the head's first layer
#: (n = 4*32 + 6*512 = 3,200: about 57 ulps = 6.8e-6 relative); about a dozen stages (2 RoBERTa
#: layers, the mix, 2 + 2 CLIP layers and projections, 3 head layers) add at most 12 * 6.8e-6 =
#: 8.2e-5 to the logit, which the sigmoid (slope <= 1/4) shrinks to 2.0e-5.
TOLERANCE = 2.0e-5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _tiny_polos.build(tmp_path_factory.mktemp("polos"), seed=0)


@pytest.fixture(scope="module")
def tiny_avg(tmp_path_factory):
    """The other pooling and a final activation before the head's sigmoid (as older checkpoints)."""
    return _tiny_polos.build(tmp_path_factory.mktemp("polos_avg"), seed=5, pool="avg", final_activation="Tanh")


def _metric(t, **kw) -> Polos:
    return Polos(checkpoint=str(t["checkpoint"]), clip_tokenizer=str(t["merges"]), **kw)


def _images(t, n: int) -> list[str]:
    return [t["images"][i % len(t["images"])] for i in range(n)]


def _reference(t, cands, refs, images, batch_size: int, tmp: Path) -> list[float]:
    job = {"checkpoint": str(t["checkpoint"]), "clip_weights": str(t["clip_weights"]), "clip_merges": str(t["merges"]),
           "batch_size": batch_size, "rows": [{"mt": c, "refs": r, "img": i} for c, r, i in zip(cands, refs, images)]}
    src, dst = tmp / "job.json", tmp / "out.json"
    src.write_text(json.dumps(job), encoding="utf-8")
    runner = Path(__file__).with_name("_polos_reference.py")
    done = subprocess.run([polos_python(), str(runner), str(src), str(dst)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(dst.read_text(encoding="utf-8"))["scores"]


@pytest.mark.needs("polos-reference")
@pytest.mark.parametrize("variant", ["tiny", "tiny_avg"])
def test_equals_the_polos_package_per_caption(variant, request, tmp_path):
    t = request.getfixturevalue(variant)
    images = _images(t, len(CANDS))
    ours = _metric(t).compute(CANDS, REFS, images=images).per_caption["polos"]
    theirs = np.asarray(_reference(t, CANDS, REFS, images, 1, tmp_path))
    assert np.all(np.abs(ours - theirs) <= TOLERANCE), (ours, theirs, np.abs(ours - theirs).max())
    assert np.ptp(theirs) > 100 * TOLERANCE  # the tiny model's scores are spread, not all one value


@pytest.mark.needs("polos-reference")
def test_the_package_moves_with_its_batch_mates_and_capeval_does_not(tiny, tmp_path):
    """The package layer-normalises over a whole batch: a caption's number changes with the
    captions batched with it (why capeval normalises each text alone: the package at batch 1)."""
    refs = [r[:1] + r[:1] if len(r) == 1 else r[:2] for r in REFS]  # two each: zip() drops none
    images = _images(tiny, len(CANDS))
    alone = np.asarray(_reference(tiny, CANDS, refs, images, 1, tmp_path))
    together = np.asarray(_reference(tiny, CANDS, refs, images, len(CANDS), tmp_path))
    assert np.abs(alone - together).max() > 10 * TOLERANCE
    ours = _metric(tiny).compute(CANDS, refs, images=images).per_caption["polos"]
    assert np.all(np.abs(ours - alone) <= TOLERANCE)


def test_one_score_per_caption_in_range_with_a_signature(tiny):
    out = _metric(tiny).compute(CANDS, REFS, images=_images(tiny, len(CANDS)))
    per = out.per_caption["polos"]
    assert per.shape == (len(CANDS),) and per.dtype == np.float64
    assert np.all((per > 0) & (per < 1))
    assert out.corpus["polos"] == pytest.approx(float(np.mean(per)), abs=1e-15)
    fields = out.signature_fields
    from capeval.metrics._clip_models import model_sha256

    assert fields["model"] == model_sha256(tiny["checkpoint"])
    assert fields["head"] == "cls-mix-ff48x24-Tanh" and fields["text"] == "roberta-h32-l2-trunc62"
    assert "trunc" not in fields


def test_a_caption_scores_the_same_alone_in_any_batch_and_order(tiny):
    """Rows 0 and 4 are the same caption, references and image; a row's score depends on it alone."""
    m = _metric(tiny)
    images = _images(tiny, len(CANDS))
    images[4] = images[0]
    full = m.compute(CANDS, REFS, images=images).per_caption["polos"]
    assert full[0] == full[4]
    order = [3, 1, 4, 0, 2]
    shuffled = m.compute([CANDS[i] for i in order], [REFS[i] for i in order],
                         images=[images[i] for i in order]).per_caption["polos"]
    assert np.array_equal(shuffled, full[order])
    for i in range(len(CANDS)):
        alone = m.compute([CANDS[i]], [REFS[i]], images=[images[i]]).per_caption["polos"]
        assert alone[0] == full[i]
    other = _metric(tiny, batch_size=1).compute(CANDS, REFS, images=images).per_caption["polos"]
    assert np.array_equal(other, full)


def test_the_score_is_the_best_reference(tiny):
    m = _metric(tiny)
    img = _images(tiny, 1)
    both = m.compute([CANDS[2]], [REFS[2]], images=img).per_caption["polos"][0]
    each = [m.compute([CANDS[2]], [[r]], images=img).per_caption["polos"][0] for r in REFS[2]]
    assert both == max(each) and len(set(each)) == len(each)


def test_the_other_pooling_and_final_activation(tiny_avg):
    out = _metric(tiny_avg).compute(CANDS, REFS, images=_images(tiny_avg, len(CANDS)))
    per = out.per_caption["polos"]
    assert out.signature_fields["head"] == "avg-mix-ff48x24-Tanh+Tanh"
    # sigmoid(tanh(z)) lies in (sigmoid(-1), sigmoid(1))
    assert np.all((per > 1 / (1 + math.e)) & (per < 1 / (1 + math.exp(-1))))


def test_a_candidate_without_references_is_nan(tiny):
    out = _metric(tiny).compute(CANDS[:2], [REFS[0], []], images=_images(tiny, 2))
    per = out.per_caption["polos"]
    assert not np.isnan(per[0]) and np.isnan(per[1])


def test_safetensors_gives_the_same_numbers(tiny, tmp_path):
    from safetensors.torch import save_file

    folder = tmp_path / "st"
    folder.mkdir()
    save_file(tiny["state_dict"], str(folder / "polos.safetensors"))
    (folder / "hparams.yaml").write_bytes((tiny["checkpoint"].parent / "hparams.yaml").read_bytes())
    images = _images(tiny, len(CANDS))
    a = _metric(tiny).compute(CANDS, REFS, images=images).per_caption["polos"]
    b = Polos(checkpoint=str(folder / "polos.safetensors"), clip_tokenizer=str(tiny["merges"])).compute(
        CANDS, REFS, images=images).per_caption["polos"]
    assert np.array_equal(a, b)


def test_text_past_the_windows_is_cut_and_counted(tiny):
    long = " ".join(["a dog runs on the grass"] * 4)  # 95 characters: 97 RoBERTa tokens (window 62)
    m = _metric(tiny)
    with pytest.warns(LongTextWarning, match="polos: 1 text"):
        out = m.compute([long], [["a dog"]], images=_images(tiny, 1))
    assert out.signature_fields["trunc"] == 1
    assert out.details["long_text"]["cut_texts"] == 1 and out.details["long_text"]["cut_tokens"] == 97 - 62
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = m.statistics([long, CANDS[0]], [["a dog"], REFS[0]], images=_images(tiny, 2))
    assert st.scores().signature_fields["trunc"] == 1


def test_through_capeval_score_with_options(tiny):
    import capeval

    images = _images(tiny, len(CANDS))
    res = capeval.score(CANDS, REFS, ["polos"], images=images,
                        options={"polos": {"checkpoint": str(tiny["checkpoint"]), "clip_tokenizer": str(tiny["merges"])}})
    direct = _metric(tiny).compute(CANDS, REFS, images=images).per_caption["polos"]
    assert np.array_equal(np.asarray(res.per_caption["polos"]), direct)
    sig = res.signatures["polos"]
    assert sig.startswith("polos|") and "model:" in sig and "version:" in sig


def test_refusals_name_the_problem(tiny, tmp_path):
    with pytest.raises(InputError, match="polos.checkpoint=PATH"):
        Polos()
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "model.ckpt").write_bytes(tiny["checkpoint"].read_bytes())
    with pytest.raises(InputError, match="hparams.yaml"):
        Polos(checkpoint=str(lone / "model.ckpt"), clip_tokenizer=str(tiny["merges"]))
    (lone / "hparams.yaml").write_text((tiny["checkpoint"].parent / "hparams.yaml").read_text().replace(
        "pool: cls", "pool: max"))
    with pytest.raises(InputError, match="pool 'max'"):
        Polos(checkpoint=str(lone / "model.ckpt"), clip_tokenizer=str(tiny["merges"]))
    with pytest.raises(InputError, match="reads the images"):
        _metric(tiny).compute(CANDS[:1], REFS[:1])


class _Payload:
    def __reduce__(self):
        return (Path.touch, (Path(sys.argv[0]).with_name("never-created"),))


def test_a_checkpoint_that_would_run_code_is_refused_unrun(tiny, tmp_path):
    import torch

    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "ran"
    payload = _Payload()
    payload.__class__.__reduce__ = lambda self: (Path.touch, (marker,))  # type: ignore[method-assign]
    torch.save({"state_dict": {}, "x": payload}, folder / "model.ckpt")
    (folder / "hparams.yaml").write_bytes((tiny["checkpoint"].parent / "hparams.yaml").read_bytes())
    with pytest.raises(InputError, match=r"weights_only=True.*GLOBAL .*safetensors"):
        Polos(checkpoint=str(folder / "model.ckpt"), clip_tokenizer=str(tiny["merges"]))
    assert not marker.exists()


def test_the_sentence_encoder_moves_the_score(tiny, tmp_path):
    """The tiny model is built so that the RoBERTa path matters (else agreement with the package
    would say nothing about it): another scalar mix moves every score."""
    import torch
    from safetensors.torch import save_file

    sd = dict(tiny["state_dict"])
    sd["scalar_mix.gamma"] = sd["scalar_mix.gamma"] * 1.5
    sd = {k: v.contiguous() for k, v in sd.items()}
    folder = tmp_path / "mix"
    folder.mkdir()
    save_file(sd, str(folder / "polos.safetensors"))
    (folder / "hparams.yaml").write_bytes((tiny["checkpoint"].parent / "hparams.yaml").read_bytes())
    images = _images(tiny, len(CANDS))
    a = _metric(tiny).compute(CANDS, REFS, images=images).per_caption["polos"]
    b = Polos(checkpoint=str(folder / "polos.safetensors"), clip_tokenizer=str(tiny["merges"])).compute(
        CANDS, REFS, images=images).per_caption["polos"]
    assert torch.is_tensor(sd["scalar_mix.gamma"])
    assert np.sum(np.abs(a - b) > 100 * TOLERANCE) >= 3


def test_hparams_elsewhere_and_a_hostile_hparams_file(tiny, tmp_path):
    from capeval.metrics._polos_model import read_hparams

    moved = tmp_path / "my-hparams.yaml"
    moved.write_bytes((tiny["checkpoint"].parent / "hparams.yaml").read_bytes())
    lone = tmp_path / "model.ckpt"
    lone.write_bytes(tiny["checkpoint"].read_bytes())
    images = _images(tiny, 2)
    a = Polos(checkpoint=str(lone), hparams=str(moved), clip_tokenizer=str(tiny["merges"])).compute(
        CANDS[:2], REFS[:2], images=images).per_caption["polos"]
    assert np.array_equal(a, _metric(tiny).compute(CANDS[:2], REFS[:2], images=images).per_caption["polos"])
    deep = tmp_path / "deep.yaml"
    deep.write_text("pool: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match="deep.yaml: its values nest deeper"):
        read_hparams(lone, deep)


def test_streams_in_any_chunking_with_the_same_bytes(tiny, tmp_path):
    """Per-row statistics: chunks of 1 and 2 write what one in-memory run writes, long-text
    counts included (the 95-character caption is cut in the RoBERTa window)."""
    import capeval
    from capeval import score_stream

    long = " ".join(["a dog runs on the grass"] * 4)
    names = [Path(p).name for p in tiny["images"]]
    rows = [{"id": f"r{i}", "candidate": c, "references": r, "image": names[i % len(names)]}
            for i, (c, r) in enumerate(zip([*CANDS, long], [*REFS, ["a dog"]]))]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    options = {"polos": {"checkpoint": str(tiny["checkpoint"]), "clip_tokenizer": str(tiny["merges"])}}
    folder = str(Path(tiny["images"][0]).parent)
    with pytest.warns(LongTextWarning):
        mem = capeval.score([r["candidate"] for r in rows], [r["references"] for r in rows], ["polos"],
                            images=[str(Path(folder) / r["image"]) for r in rows], options=options)
    assert "trunc:1" in mem.signatures["polos"]
    for size in (1, 2):
        with pytest.warns(LongTextWarning):
            got = score_stream(src, ["polos"], chunk_size=size, images=folder, options=options,
                               keep_per_caption=True)
        assert np.array_equal(np.asarray(got.per_caption["polos"]), np.asarray(mem.per_caption["polos"]))
        assert got.signatures["polos"] == mem.signatures["polos"]
