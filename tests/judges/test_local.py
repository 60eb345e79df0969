"""The local backend on tiny random models: CLAIR answers in form, FLEUR's smoothed scores equal
a direct computation from the model's logits (FLEUR's own procedure, written out here), and a
row's value does not depend on the rows judged with it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import capeval
from capeval.judges.backend import JudgeUnavailable

CANDS = ["a dog runs on the grass", "two cats sleep", "a red bus on the street", "a man rides a horse",
         "a plate of food", "birds fly over water"]
REFS = [["a dog running"], ["cats sleeping on a bed", "two cats"], ["a bus in a street"], ["a horse rider"],
        ["food on a plate"], ["birds over a lake"]]


def _fleur_direct(folder, prompt: str, image: str, answer: str) -> float:
    """FLEUR's smoothing as its published script computes it: greedy answer tokens, the softmax
    of the logits at the digit tokens found by FLEUR's search (one full forward pass here, not
    the backend's cached steps)."""
    import torch
    import transformers
    from PIL import Image

    proc = transformers.AutoProcessor.from_pretrained(folder, local_files_only=True)
    model = transformers.AutoModelForImageTextToText.from_pretrained(folder, local_files_only=True).eval()
    tok = proc.tokenizer
    inp = proc(text="<image>\n" + prompt, images=Image.open(image).convert("RGB"), return_tensors="pt")
    answer_ids = torch.tensor([tok.convert_tokens_to_ids(list(answer))])
    ids = torch.cat([inp["input_ids"], answer_ids], dim=1)
    with torch.no_grad():
        logits = model(input_ids=ids, pixel_values=inp["pixel_values"]).logits[0].double()
    start = inp["input_ids"].shape[1] - 1  # the logits that chose answer token j are at start + j
    rate2token = {s: tok.encode(str(s), add_special_tokens=False)[-1] for s in range(10)}
    out = answer_ids[0]

    def probs(j):
        return torch.softmax(logits[start + j], dim=-1)

    value = float(answer)
    shown = str(value)
    if value < 1.0:
        d1 = int(shown[shown.index(".") + 1])
        where = (out == rate2token[d1]).nonzero().flatten().tolist()
        j = where[1] if (len(where) > 1 and d1 == 0) else where[0]
        p = probs(j)
        score = sum(float(p[rate2token[r]]) * r * 0.1 for r in range(10))
        if len(shown) > 3:
            d2 = int(shown[shown.index(".") + 2])
            where = (out == rate2token[d2]).nonzero().flatten().tolist()
            p2 = probs(where[1] if len(where) > 1 else where[0])
            score += sum(float(p2[rate2token[r]]) * r * 0.01 for r in range(10))
        return score
    p = probs((out == rate2token[1]).nonzero().flatten().tolist()[0])
    return 0.9 * float(p[rate2token[0]]) + float(p[rate2token[1]])


def test_fleur_smoothing_equals_the_direct_computation_from_the_logits(tiny_llava, images):
    from capeval.judges import prompts

    imgs = [images[k % len(images)] for k in range(len(CANDS))]
    r = capeval.score(CANDS, REFS, ["fleur", "reffleur"], images=imgs,
                      options={f: {"model": str(tiny_llava), "cache": False} for f in ("fleur", "reffleur")})
    for fam in ("fleur", "reffleur"):
        for k, (c, e) in enumerate(zip(CANDS, r.explanations[fam])):
            assert e.failure is None
            prompt = prompts.fleur_prompt(c, REFS[k] if fam == "reffleur" else None)
            want = _fleur_direct(tiny_llava, prompt, imgs[k], e.answer)
            # float32 logits, from cached decoding steps vs one full pass: a few ulps of the
            # probabilities (each <= 1), summed with weights <= 0.9 over ten digits
            assert abs(r.per_caption[fam][k] - want) < 1e-5, (fam, k, e.answer)
            assert e.written == float(e.answer)
        assert "smooth:ev-digits" in r.signatures[fam] and "backend:local" in r.signatures[fam]


def test_clair_on_a_tiny_model_answers_in_form_and_a_row_is_its_own(local_backend):
    opts = {"clair": {"model": str(local_backend.folder), "cache": False, "max_tokens": 48}}
    r = capeval.score(CANDS, REFS, ["clair"], options=opts)
    v = r.per_caption["clair"]
    assert not np.isnan(v).any() and np.all((v >= 0) & (v <= 1))
    for e in r.explanations["clair"]:
        assert e.answer.startswith('{"score": ') and e.answer.endswith('"}')
        assert e.score * 100 == pytest.approx(int(e.answer.split(":")[1].split(",")[0]))
    alone = [capeval.score([c], [refs], ["clair"], options=opts).per_caption["clair"][0]
             for c, refs in zip(CANDS[:2], REFS[:2])]
    assert alone == v[:2].tolist()
    assert r.details["clair"]["completion_tokens"] > 0


def test_a_text_only_model_refuses_images_by_name(local_backend, images):
    with pytest.raises(JudgeUnavailable, match="text-only model cannot see the images"):
        capeval.score(CANDS[:1], REFS[:1], ["fleur"], images=images[:1],
                      options={"fleur": {"model": str(local_backend.folder), "cache": False}})


def test_no_judge_is_an_error_that_says_how_to_give_one():
    with pytest.raises(JudgeUnavailable, match="--judge-model"):
        capeval.score(CANDS[:1], REFS[:1], ["clair"])


def test_the_cache_key_follows_the_model_files(tiny_judge, tmp_path):
    import shutil

    from capeval.judges.local import model_digest

    copy = tmp_path / "copy"
    shutil.copytree(tiny_judge, copy)
    assert model_digest(copy) == model_digest(tiny_judge)
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")
    assert model_digest(copy) != model_digest(tiny_judge)


def test_an_answer_from_the_local_cache_is_the_answer(local_backend, tmp_path):
    opts = {"clair": {"model": str(local_backend.folder), "cache": str(tmp_path), "max_tokens": 32}}
    first = capeval.score(CANDS[:2], REFS[:2], ["clair"], options=opts)
    before = local_backend.requests_sent
    again = capeval.score(CANDS[:2], REFS[:2], ["clair"], options=opts)
    assert again.per_caption["clair"].tolist() == first.per_caption["clair"].tolist()
    assert again.details["clair"]["requests"] == 0 and math.isfinite(again.corpus["clair"])
    assert [e.reason for e in again.explanations["clair"]] == [e.reason for e in first.explanations["clair"]]
    del before
