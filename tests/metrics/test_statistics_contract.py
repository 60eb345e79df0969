"""The statistics contract (``capeval.metrics.statistics``): for every family that runs here, the
per-caption and corpus scores of the whole input equal (``==``, NaN where NaN) those from the
merged statistics of chunks of it, for chunk sizes 1, 7, 1000 and a random split, with the
corpus pre-pass (CIDEr's df) merged from the chunks too and the statistics merged in a random
grouping."""
from __future__ import annotations

import itertools
import math
import random
from functools import reduce

import numpy as np
import pytest

from capeval.metrics.base import Metric
from capeval.metrics.registry import BUILTIN_FAMILIES, get_family
from capeval.metrics.statistics import RowMean, Statistics
from capeval.text import tokenize_corpus
from tests._needs import family_needs

CAPS = "references_karpathy_test/coco_precomp/testall_caps.txt"

#: Every built-in family (``registry.BUILTIN_FAMILIES``) is a case with its default options on
#: :data:`DEFAULT_ROWS` rows unless named below: a new built-in is checked with no edit here.
DEFAULT_ROWS = 8
#: rows of the families cheap enough for more
ROWS = {"bleu": 120, "bleu_smooth": 120, "rouge_l": 120, "cider_d": 120, "cider": 120, "meteor": 60, "ter": 60,
        "wmd": 40, "wembsim": 40, "spice": 16, "spider": 16}
#: options a family runs with here instead of its defaults, with why
OPTIONS: dict[str, dict] = {
    "meteor": {"backend": "native"},  # the jar's pool runs the same aligner (tests/metrics/test_meteor_native.py)
    "bertscore": {"padding_floor": False},  # bert_score's padding floor depends on batch-mates
    # the shipped mpnet model (the default one streams too: tests/stream/test_stream_learned.py)
    "learned": {"model": "mpnet"},
}
#: further option sets of a family: (id, family, options)
VARIANTS = [
    ("bertscore-idf", "bertscore", {"padding_floor": False, "idf": True}),  # idf from the merged pre-pass counts
    ("qace_ref-merged", "qace_ref", {"reduction": "merged"}),
]
#: built-ins whose statistics are checked elsewhere: where, and why not here
ELSEWHERE = {
    "clip_s": "test_image_families_chunked_statistics_equal_the_whole below: one image per row",
    "pac_s": "test_image_families_chunked_statistics_equal_the_whole below: one image per row",
    "qace_img": "does not stream (tests/stream/test_stream_every_family.py NOT_STREAMED): padded batches",
    "clair": "tests/stream/test_stream_every_family.py: a tiny random judge model built there",
    "fleur": "tests/stream/test_stream_every_family.py: a tiny random LLaVA built there",
    "reffleur": "tests/stream/test_stream_every_family.py: a tiny random LLaVA built there",
    "pairjudge": "does not stream (tests/stream/test_stream_every_family.py NOT_STREAMED): judges pairs",
}
#: what a case needs beyond its family's defaults
CASE_NEEDS = {"learned": ("model:encoder-mpnet-base",)}

#: (id, family, options, rows)
CASES = [(fam, fam, OPTIONS.get(fam, {}), ROWS.get(fam, DEFAULT_ROWS))
         for fam in sorted(BUILTIN_FAMILIES - set(ELSEWHERE))] + [
    (id_, fam, opts, ROWS.get(fam, DEFAULT_ROWS)) for id_, fam, opts in VARIANTS]


def test_every_built_in_family_is_a_case_or_checked_elsewhere():
    stale = sorted(set(ELSEWHERE) - BUILTIN_FAMILIES)
    assert not stale, f"no longer built-in families: remove {stale} from ELSEWHERE"
    for table in (ROWS, OPTIONS, CASE_NEEDS):
        assert set(table) <= BUILTIN_FAMILIES - set(ELSEWHERE), sorted(set(table) - BUILTIN_FAMILIES)
    assert {fam for _, fam, _, _ in CASES} == BUILTIN_FAMILIES - set(ELSEWHERE)


def _rows(data_dir, n: int):
    """Real COCO captions: each image's first caption scored against the other four. Two rows
    repeat earlier ones (a repeated unit is counted per row by every corpus rule)."""
    lines = (data_dir / CAPS).read_text(encoding="utf-8").splitlines()
    cands = [lines[5 * i] for i in range(n)]
    refs = [lines[5 * i + 1: 5 * i + 5] for i in range(n)]
    for i in (3, n - 2):
        cands[i], refs[i] = cands[1], refs[1]
    return cands, refs


def _cuts(n: int, how, rng: random.Random) -> list[tuple[int, int]]:
    if how == "random":
        points = sorted(rng.sample(range(1, n), k=min(5, n - 1)))
    else:
        points = list(range(how, n, how))
    bounds = [0, *points, n]
    return list(itertools.pairwise(bounds))


def _merge_randomly(parts: list[Statistics], rng: random.Random) -> Statistics:
    """Merge neighbours in a random order: any grouping of associative merges."""
    parts = list(parts)
    while len(parts) > 1:
        i = rng.randrange(len(parts) - 1)
        parts[i: i + 2] = [Statistics.merge(parts[i: i + 2])]
    return parts[0]


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _metric(cls, options):
    return cls(**options)


@pytest.mark.parametrize("family,options,n", [
    pytest.param(fam, opts, n, id=id_, marks=pytest.mark.needs(*family_needs(get_family(fam)), *CASE_NEEDS.get(fam, ())))
    for id_, fam, opts, n in CASES])
def test_chunked_statistics_equal_the_whole(family, options, n, data_dir):
    cls = get_family(family)
    cands, refs = _rows(data_dir, n)
    if cls.text_input == "tokenized":
        cands, refs = tokenize_corpus(cands, refs, "ptb")
    with _metric(cls, options) as m:
        whole = m.compute(cands, refs)
        assert m.aggregate(tuple(whole.per_caption)) == m.aggregate(tuple(whole.per_caption))
    rng = random.Random(34)
    for how in (1, 7, 1000, "random"):
        cuts = _cuts(n, how, rng)
        chunks = [(cands[a:b], refs[a:b]) for a, b in cuts]
        opts = dict(options)
        with _metric(cls, options) as m:
            states = [m.prepass(c, r) for c, r in chunks]
        if states[0] is not None:  # the pre-pass state of the whole input, merged from the chunks
            opts.update(cls.prepass_options(reduce(lambda x, y: x + y, states)))
        with _metric(cls, opts) as m:
            parts = [m.statistics(c, r) for c, r in chunks]
        assert sum(p.n for p in parts) == n
        merged = _merge_randomly(parts, rng)
        reduced = _merge_randomly([p.reduced() for p in parts], rng)
        got = merged.scores()
        for name, per in whole.per_caption.items():
            chunked = np.concatenate([p.per_caption()[name] for p in parts])
            assert _same(chunked, per), f"{family} {name}: per-caption scores of chunks of {how}"
            assert _same(got.per_caption[name], per), f"{family} {name}: per-caption from merged statistics"
            for corpus in (got.corpus[name], reduced.corpus()[name]):
                want = whole.corpus[name]
                assert corpus == want or (math.isnan(corpus) and math.isnan(want)), \
                    f"{family} {name}: corpus {corpus!r} != {want!r} with chunks of {how}"
        assert got.signature_fields == whole.signature_fields


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A tiny random CLIP (no CLIP weights here) in both checkpoint forms, and images."""
    for mod in ("torch", "transformers", "PIL", "ftfy"):
        pytest.importorskip(mod)
    from tests.metrics._tiny_clip import build_hf, save_openai, synthetic_images

    root = tmp_path_factory.mktemp("tinyclip")
    model, merges = build_hf(root / "hf")
    return {"clip_s": save_openai(model, root / "tiny.pt"), "pac_s": save_openai(model, root / "pacs.pth", wrap=True),
            "merges": merges, "images": [str(p) for p in synthetic_images(root / "img")]}


@pytest.mark.parametrize("family", ["clip_s", "pac_s"])
def test_image_families_chunked_statistics_equal_the_whole(family, tiny_clip, data_dir, tmp_path, monkeypatch):
    """CLIP-S/RefCLIP-S and PAC-S/RefPAC-S, one image per row: the chunks' statistics give the
    whole input's numbers (every forward pass has the torch runner's fixed shape). Embeddings
    kept in memory are dropped before every call, so each chunk embeds its own images."""
    from capeval.metrics import _clip_models

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    n = 24
    cands, refs = _rows(data_dir, n)
    rng = random.Random(34)
    images = [rng.choice(tiny_clip["images"]) for _ in range(n)]
    cls = get_family(family)
    opts = {"model": str(tiny_clip[family]), "tokenizer": str(tiny_clip["merges"]), "embedding_cache": False}
    with cls(**opts) as m:
        _clip_models._memory.clear()
        whole = m.compute(cands, refs, images=images)
        for how in (1, 7, 1000, "random"):
            parts = []
            for a, b in _cuts(n, how, rng):
                _clip_models._memory.clear()
                parts.append(m.statistics(cands[a:b], refs[a:b], images=images[a:b]))
            got = _merge_randomly(parts, rng).scores()
            for name, per in whole.per_caption.items():
                assert _same(got.per_caption[name], per), f"{family} {name}: per-caption with chunks of {how}"
                assert got.corpus[name] == whole.corpus[name], f"{family} {name}: corpus with chunks of {how}"
            assert got.signature_fields == whole.signature_fields


def test_reduce_keeps_only_what_the_corpus_reads():
    """BLEU's and native METEOR's statistics reduce to totals (no per-row memory in a streamed
    run); a mean keeps its column, which numpy sums pairwise over the whole input."""
    from capeval.metrics.bleu import BleuAggregate

    rows = {"testlen": np.array([3, 4]), "reflen": np.array([3, 5]),
            "guess": np.array([[3, 2, 1, 0], [4, 3, 2, 1]]), "correct": np.array([[2, 1, 0, 0], [4, 3, 2, 1]])}
    st = Statistics(2, BleuAggregate(4), rows)
    red = st.reduced()
    assert red.rows == {} and red.totals["guess"].tolist() == [7, 5, 3, 1]
    assert red.corpus() == st.corpus()
    mean = Statistics(3, RowMean(("x",)), {"x": np.array([0.1, 0.2, 0.3])})
    assert mean.reduced() is mean and mean.corpus() == {"x": float(np.mean([0.1, 0.2, 0.3]))}


def test_merge_refuses_mismatched_parts():
    a = Statistics(1, RowMean(("x",)), {"x": np.array([1.0])}, fields={"v": 1})
    with pytest.raises(ValueError, match="signature fields"):
        Statistics.merge([a, Statistics(1, RowMean(("x",)), {"x": np.array([1.0])}, fields={"v": 2})])
    with pytest.raises(ValueError, match="different rules"):
        Statistics.merge([a, Statistics(1, RowMean(("y",)), {"y": np.array([1.0])}, fields={"v": 1})])


def test_the_default_contract_is_the_per_row_value_and_its_mean():
    class Length(Metric):
        family, variant = "toy_len", "toy_len"
        outputs = ()

        def compute(self, candidates, references):
            from capeval.result import MetricScores

            per = np.array([len(c) for c in candidates], dtype=float)
            return MetricScores(corpus={"toy_len": float(np.mean(per))}, per_caption={"toy_len": per})

    m = Length()
    parts = [m.statistics(["ab", "c"], [["x"], ["y"]]), m.statistics(["defg"], [["z"]])]
    merged = Statistics.merge(parts)
    assert merged.corpus() == m.compute(["ab", "c", "defg"], [["x"], ["y"], ["z"]]).corpus
    assert merged.per_caption()["toy_len"].tolist() == [2.0, 1.0, 4.0]
    assert Length.prepass is Metric.prepass and m.prepass(["a"], [["b"]]) is None


def test_a_family_whose_corpus_is_not_the_mean_must_declare_its_statistics():
    """The default contract would merge it into another number: an error naming it, not a guess."""
    from capeval.errors import InputError
    from capeval.result import MetricScores

    class Median(Metric):
        family, variant = "toy_median", "toy_median"
        outputs = ()

        def compute(self, candidates, references):
            per = np.array([len(c) for c in candidates], dtype=float)
            return MetricScores(corpus={"toy_median": float(np.median(per))}, per_caption={"toy_median": per})

    with pytest.raises(InputError, match=r"'toy_median': its corpus toy_median \(2.0\) is not the mean"):
        Median().statistics(["ab", "c", "defgh"], [["x"], ["y"], ["z"]])
