"""No test compares floats bit for bit where the arithmetic depends on the CPU.

A float kernel (BLAS/MKL, torch, numpy's SIMD loops) or a C library function (pow, exp, log;
the JVM's ``Math.pow`` intrinsic) may round its last bit differently on another CPU, so a value
computed there differs from a constant written here, and two kernels of one machine may differ on
another. This test greps ``tests/`` for the bit-equality forms (``torch.equal``,
``array_equal`` / ``assert_array_equal``, ``==``/``!=`` against a float literal of 5+ decimals)
and fails on a file outside :data:`ALLOWED`, where each file says why its comparisons are
CPU-independent:

* integer arithmetic, parsed numbers, or correctly rounded IEEE operations (+, -, *, /, sqrt)
  in a fixed order, which every conforming CPU computes alike;
* two values from the same process (or the same machine): streamed vs in-memory, compiled vs
  its Python twin, batched vs one at a time, saved vs loaded, a reference implementation run
  here; whatever the CPU, both sides use its arithmetic.

Everything else takes a tolerance derived from the computation (tests/metrics/test_clip.py,
tests/metrics/test_ngram_oracles.py's documented constants)."""
from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PATTERN = re.compile(r"torch\.equal\(|array_equal\(|(==|!=)\s*-?\d+\.\d{5,}|\d+\.\d{5,}(e-?\d+)?\s*(==|!=)")

SAME = "same process or machine on both sides"
ALLOWED: dict[str, str] = {
    "data/test_judgment_files.py": "parsed numbers, no arithmetic",
    "data/test_loader_inputs.py": "parsed labels (0.0/1.0), no arithmetic",
    "data/test_loaders.py": "parsed judgments and 0.5 tie labels, no arithmetic",
    "fuzz/targets.py": f"streamed vs in-memory scores: {SAME}",
    "judges/test_apps.py": f"the torchmetrics wrapper vs capeval.score on the same cached answers: {SAME}",
    "learn/test_builder.py": "integer indices of a seeded split",
    "learn/test_encoder_finetune.py": "parameters before and after a frozen step: unchanged memory, not arithmetic",
    "learn/test_features.py": f"feature columns vs the metrics' scores ({SAME}); min-max scaling of small "
                              "integers (exact)",
    "learn/test_features_images.py": "feature columns holding small integers",
    "learn/test_learned_metric.py": f"the metric vs the model's predict on its features: {SAME}",
    "learn/test_learned_prepass.py": f"chunked/reordered vs whole predictions and features: {SAME}",
    "learn/test_mlp.py": f"seeded training twice, predictions vs recorded calls: {SAME}",
    "learn/test_model_files.py": "parameters and predictions saved then loaded: stored bytes, same process",
    "learn/test_nneval_metric.py": f"the metric vs the model's predict: {SAME}",
    "learn/test_ranker.py": f"predictions saved then loaded; parsed human scores: {SAME}",
    "learn/test_refsets.py": f"capped vs direct feature matrices: {SAME}",
    "learn/test_rowlocal.py": f"row slices vs the whole forward pass: {SAME}",
    "learn/test_train.py": f"seeded training twice: {SAME}",
    "metaeval/test_figures.py": "the matrix shown vs the matrix given: copied values, no arithmetic",
    "metrics/test_bertscore.py": f"cached vs recomputed embeddings and scores, batch orders: {SAME}",
    "metrics/test_bleu.py": f"vs pycocoevalcap run here: {SAME}",
    "metrics/test_bleu_smooth.py": f"zeros, and vs the same scorer's other entry point: {SAME}",
    "metrics/test_cider.py": f"vs pycocoevalcap run here: {SAME}",
    "metrics/test_clip.py": f"cached vs recomputed scores and a state dict loaded back: {SAME}",
    "metrics/test_clip_cache.py": f"cached vs recomputed scores: {SAME}",
    "metrics/test_clip_image.py": f"preprocessing vs the reference transform run here: {SAME}",
    "metrics/test_contract.py": f"the contract's helper comparing two runs: {SAME}",
    "metrics/test_meteor.py": f"vs the jar run here, or the fake jar's parsed numbers: {SAME}",
    "metrics/test_meteor_convert.py": "converted arrays of integers and parsed strings",
    "metrics/test_meteor_native.py": "the shipped pow table pinned (no libm pow at the penalty), +,-,*,/ "
                                     f"otherwise; compiled vs Python, native vs the jar run here: {SAME}",
    "metrics/test_ngram_oracles.py": f"vs pycocoevalcap run here: {SAME} (documented constants use approx)",
    "metrics/test_polos.py": f"shuffled, alone, batch size 1 and safetensors vs the same run: {SAME}",
    "metrics/test_rouge.py": f"vs pycocoevalcap run here: {SAME}",
    "metrics/test_sentsim.py": f"one scorer twice: {SAME}",
    "metrics/test_spider.py": f"SPIDEr vs the mean of its parts computed here: {SAME}",
    "metrics/test_statistics_contract.py": f"statistics path vs direct scores: {SAME}",
    "metrics/test_ter.py": f"vs sacrebleu run here: {SAME}",
    "metrics/test_toy_family.py": f"streamed vs in-memory: {SAME}",
    "metrics/test_wmd.py": f"batched vs single, fast vs reference solver here: {SAME}",
    "pregen/test_pregen_adapters.py": f"two adapters' outputs: {SAME}",
    "pregen/test_pregen_analysis.py": "r and r2 rounded to 5 decimals (a tolerance); a column written then read",
    "resources/test_encoder_determinism.py": f"reference vs another run of the encoder: {SAME}",
    "resources/test_vectors.py": "parsed float32 vectors vs gensim's/spaCy's reading of the same files",
    "service/test_cache.py": "cached values read back vs the values stored: bytes",
    "stats/test_bootstrap.py": f"big vs small batches of one seeded resampling: {SAME}",
    "stats/test_correlation.py": "Kendall's tau from integer pair counts with +, -, *, / and sqrt: correctly rounded",
    "stats/test_pairwise.py": "credits 0, 0.5 and 1: exact",
    "stream/_rows.py": f"streamed vs in-memory: {SAME}",
    "stream/test_keys128.py": "integer n-gram keys and counts",
    "stream/test_run_folder.py": "statistics written then read back: bytes",
    "stream/test_stream_learned.py": f"streamed vs in-memory: {SAME}",
    "stream/test_stream_prepass.py": f"a negative check between two runs: {SAME}",
    "stress/test_harness.py": f"harness scores vs capeval.score: {SAME}",
    "test_api.py": f"permuted vs plain, vs pycocoevalcap run here: {SAME}",
    "test_api_line_breaks.py": f"vs pycocoevalcap run here and vs the text without breaks: {SAME}",
    "test_plan.py": f"plan vs plain calls; parsed scores-file columns: {SAME}",
}


def _hits() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATTERN.search(line) and "approx(" not in line:
                found.setdefault(path.relative_to(TESTS).as_posix(), []).append(f"{n}: {line.strip()}")
    return found


def test_every_bit_equality_of_floats_is_allowed_with_its_reason():
    hits = _hits()
    new = {f: lines[:3] for f, lines in hits.items() if f not in ALLOWED}
    assert not new, ("float bit-equality in a file not in ALLOWED: compare with a tolerance derived from the "
                     f"computation, or add the file with why its arithmetic is CPU-independent: {new}")


def test_the_allow_list_has_no_stale_entries():
    hits = _hits()
    stale = sorted(f for f in ALLOWED if f not in hits)
    assert not stale, f"no float bit-equality left in {stale}: remove them from ALLOWED"
    assert all(len(why) > 20 for why in ALLOWED.values())


def test_the_pattern_finds_the_forms_it_names():
    for line in ("assert torch.equal(a, b)", "np.testing.assert_array_equal(x, y)",
                 "assert x == 0.2702722669478631", "assert 1.2421919556558583 == y", "assert r != 9.03602e-05"):
        assert PATTERN.search(line), line
    for line in ("assert n == 5", "assert x == pytest.approx(0.5)", "assert s == 'a 0.5'"):
        assert not PATTERN.search(line) or "approx(" in line, line
