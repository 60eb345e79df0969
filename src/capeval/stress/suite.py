"""``capeval.stress``: items -> perturbations -> scores -> statistics, under one signature."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..plan import ScoringPlan
from ..signature import signature_line
from ..stats.bootstrap import DEFAULT_RESAMPLES
from . import perturbations as P
from . import rules as R
from .items import PARAGRAPH_SOURCES, StressItem, benchmark_items, input_items, source_label
from .scoring import CONTROL, Scored, score_variants, unit_ids
from .stats import CI_LEVEL, SAME_FRACTION, TIE_TOL, Cell, cell, same_tolerance

#: Bump when a rule, a word list or a statistic changes what the suite reports.
SUITE_VERSION = "1"
DEFAULT_SEED = 12345


@dataclass
class StressResult:
    signature: str
    source: str
    seed: int
    items: list[StressItem]
    perturbations: list[str]
    metrics: list[str]
    #: metric -> perturbation -> statistics
    results: dict[str, dict[str, Cell]]
    metric_signatures: dict[str, str]
    tolerances: dict[str, float]
    #: perturbation -> reason -> items skipped for it
    skip_reasons: dict[str, dict[str, int]]
    #: perturbation -> (control, perturbed) of its first applicable item
    examples: dict[str, tuple[str, str]]
    #: perturbation -> one text per item (None where skipped)
    texts: dict[str, list[str | None]] = field(repr=False, default_factory=dict)
    #: metric -> variant ("control" or a perturbation) -> one score per item
    scores: dict[str, dict[str, np.ndarray]] = field(repr=False, default_factory=dict)
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    family_seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "source": self.source,
            "n_items": len(self.items),
            "perturbations": {p: {"expected": P.BY_NAME[p].expected, "change": P.BY_NAME[p].change,
                                  "skip_reasons": self.skip_reasons.get(p, {}),
                                  "example": list(self.examples[p]) if p in self.examples else None}
                              for p in self.perturbations},
            "tolerance": {"tie": TIE_TOL, "same_fraction_of_sd": SAME_FRACTION,
                          "same": {m: self.tolerances[m] for m in self.results}, "ci_level": CI_LEVEL},
            "metric_signatures": self.metric_signatures,
            "results": {m: {p: c.as_dict() for p, c in by.items()} for m, by in self.results.items()},
            "seconds": round(self.seconds, 3),
            "seconds_by_family": {k: round(v, 3) for k, v in self.family_seconds.items()},
        }


def _items(source, input_path, items, n, seed, root) -> tuple[list[StressItem], str]:
    given = [x is not None for x in (source, input_path, items)]
    if sum(given) != 1:
        raise InputError("give exactly one of: a source benchmark (coco, flickr30k, flickr8k), input=rows.jsonl, "
                         "or items=[...]")
    if source is not None:
        return benchmark_items(source, root=root, n=n, seed=seed), str(source)
    if input_path is not None:
        return input_items(input_path, n=n), source_label(None, input_path)
    out = []
    for k, it in enumerate(items):
        if isinstance(it, StressItem):
            out.append(it)
        elif isinstance(it, dict) and "candidate" in it and "references" in it:
            out.append(StressItem(str(it.get("id", k)), it["candidate"], tuple(it["references"]), it.get("image")))
        else:
            raise InputError(f"item {k}: expected a StressItem or a dict with candidate and references, got {it!r}")
    if n is not None:
        out = out[:n]
    blob = json.dumps([[i.key, i.candidate, list(i.references), i.image] for i in out], ensure_ascii=False)
    return out, "items:sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _check_keys(items: Sequence[StressItem]) -> None:
    if not items:
        raise InputError("no items to perturb")
    seen: dict[str, int] = {}
    for k, it in enumerate(items):
        if it.key in seen:
            raise InputError(f"items {seen[it.key]} and {k} share the id {it.key!r}; ids seed the perturbations "
                             "and must be unique")
        seen[it.key] = k


def _check_lengths(items: Sequence[StressItem]) -> None:
    """Refuse, naming the item, a candidate spaCy would parse without bound (1,000,000
    characters: 55 s and 3.5 GB, then a MemoryError); the cap is SPICE-py's, which parses the
    same way."""
    from ..metrics._limits import SPICE_MAX_CHARS

    for it in items:
        if len(it.candidate) > SPICE_MAX_CHARS:
            raise InputError(f"item {it.key!r}: the candidate has {len(it.candidate):,} characters; the stress rules "
                             f"parse candidates of at most {SPICE_MAX_CHARS:,} characters with spaCy (the cap "
                             "SPICE-py applies). Shorten or drop that row.")


def perturb(items: Sequence[StressItem], names: Sequence[str], seed: int, *, parser=None, lexicon=None
            ) -> tuple[dict[str, list[str | None]], dict[str, dict[str, int]]]:
    """Each perturbation's text for each item (None where skipped) and the skip reasons."""
    from .lexicon import WordNetLexicon

    if parser is None:
        from ..data.distractors import SpacyParser

        parser = SpacyParser()
    lexicon = lexicon if lexicon is not None else WordNetLexicon()
    _check_lengths(items)
    parses = parser([it.candidate for it in items])
    donors = [(it.image, it.candidate) for it in items]
    texts: dict[str, list[str | None]] = {p: [] for p in names}
    reasons: dict[str, dict[str, int]] = {p: {} for p in names}
    for it, parse in zip(items, parses):
        ctx = R.Context(it.key, it.candidate, parse, it.references, it.image, donors, lexicon)
        for p in names:
            out = P.apply(p, ctx, seed)
            if isinstance(out, R.Skip):
                texts[p].append(None)
                reasons[p][out.reason] = reasons[p].get(out.reason, 0) + 1
            else:
                texts[p].append(out)
    return texts, reasons


def _perturbation_names(perturbations, paragraphs: bool = False) -> list[str]:
    """The requested perturbations; by default a caption source's set, or a paragraph source's
    (coco-paragraph) set."""
    if perturbations is None:
        return [p.name for p in (P.PARAGRAPH if paragraphs else P.CAPTION)]
    names = perturbations.split(",") if isinstance(perturbations, str) else list(perturbations)
    names = [p.strip() for p in names if p.strip()]
    unknown = [p for p in names if p not in P.BY_NAME]
    if unknown or not names:
        raise InputError(f"unknown perturbation(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"known: {', '.join(P.BY_NAME)}")
    return list(dict.fromkeys(names))


def _image_paths(items: Sequence[StressItem], plan: ScoringPlan, images_dir) -> list[str] | None:
    """Image paths for the metrics that read images (one per item), or None when none does."""
    if not plan.reads_images:
        return None
    names = [it.image for it in items]
    if images_dir is not None:
        from ..imagedir import ImageDir

        return ImageDir(images_dir).resolve(names, "stress items")
    if plan.image_metrics:
        if any(n is None for n in names):
            k = names.index(None)
            raise InputError(f"item {items[k].key!r} names no image, and "
                             f"{', '.join(plan.image_metrics)} read(s) images")
        return [str(n) for n in names]  # an input file's image fields are paths
    return None


def export_units(path, items: Sequence[StressItem], texts: dict[str, list[str | None]]) -> int:
    """Write every distinct unit (control and applicable perturbed captions) as JSONL for a
    scores file to be made from; returns how many."""
    from ..outputs import atomic_open

    records: dict[str, dict[str, Any]] = {}
    columns: list[tuple[str, list[str | None]]] = [(CONTROL, [it.candidate for it in items]), *texts.items()]
    for name, col in columns:
        rows = [i for i, t in enumerate(col) if t is not None]
        ids = unit_ids([items[i] for i in rows], [str(col[i]) for i in rows])
        for i, uid in zip(rows, ids):
            rec = records.get(uid)
            if rec is None:
                rec = records[uid] = {"id": uid, "candidate": col[i], "references": list(items[i].references),
                                      "image": items[i].image, "benchmark": "stress", "keys": []}
            rec["keys"].append({"item": items[i].key, "perturbation": name})
    with atomic_open(path) as fh:
        for rec in records.values():
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(records)


def stress(
    source: str | None = None,
    metrics: Iterable | None = None,
    *,
    input: str | Path | None = None,
    items: Sequence[StressItem | dict] | None = None,
    scores: Mapping[str, str | Path] | None = None,
    n: int | None = None,
    seed: int = DEFAULT_SEED,
    perturbations: Sequence[str] | str | None = None,
    images_dir: str | Path | None = None,
    root: str | Path | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    tokenizer: str = "ptb",
    n_resamples: int = DEFAULT_RESAMPLES,
    export: str | Path | None = None,
    parser: Callable | None = None,
    lexicon=None,
    progress: Callable[[str], None] | None = None,
) -> StressResult:
    """Stress-test caption metrics: perturb each item's candidate and report, per metric and
    perturbation, how often the metric moved the way a good metric should (docs/STRESS.md).

    The items come from exactly one of ``source`` (``coco``, ``flickr30k``, ``flickr8k``: one human
    caption per image as the candidate, the others as references), ``input`` (a ``capeval score``
    JSONL/CSV file) or ``items`` (``StressItem``s or dicts with ``candidate``, ``references``,
    optional ``id`` and ``image``); ``n`` keeps the first n. ``metrics`` holds metric names,
    ``UserMetric`` subclasses or callables; ``scores`` maps a column name to a scores file of the
    units ``export`` writes. ``parser`` replaces spaCy (texts -> parses, see
    :mod:`capeval.data.distractor_tasks`)."""
    start = time.perf_counter()
    if isinstance(metrics, ScoringPlan):  # names resolved, options checked and scores read by the caller
        plan = _given_plan(metrics, scores, options, tokenizer)
        names = list(dict.fromkeys(plan.metrics))
    else:
        names = _metric_names(metrics, scores, export)
        # names resolved, options checked and scores files read once, for every variant's call
        plan = ScoringPlan.build(names, tokenizer=tokenizer, options=options, scores=scores) if names or scores else None
    _check_numbers(seed, n_resamples)
    _refuse_pairwise(plan)
    perts = _perturbation_names(perturbations, paragraphs=source in PARAGRAPH_SOURCES)
    chosen, label = _items(source, input, items, n, int(seed), root)
    _check_keys(chosen)
    images = _image_paths(chosen, plan, images_dir) if plan is not None and names else None
    say = progress or (lambda msg: None)
    say(f"perturbing {len(chosen)} items")
    texts, reasons = perturb(chosen, perts, int(seed), parser=parser, lexicon=lexicon)
    if export is not None:
        export_units(export, chosen, texts)
    sig = _signature(label, len(chosen), int(seed), parser, n_resamples, perts)
    variants: dict[str, list[str | None]] = {CONTROL: [it.candidate for it in chosen], **texts}
    scored = score_variants(chosen, variants, plan, images=images, progress=say) if plan is not None else Scored()
    user = [c.name for c in plan.columns] if plan is not None else []
    hib = {m: next(o.higher_is_better for o in plan.family_of(m).outputs if o.name == m) for m in names}
    hib |= dict.fromkeys(user, True)
    results, tolerances = _statistics(scored, texts, perts, hib, n_resamples, int(seed))
    examples = {}
    for p in perts:
        k = next((i for i, t in enumerate(texts[p]) if t is not None), None)
        if k is not None:
            examples[p] = (chosen[k].candidate, str(texts[p][k]))
    return StressResult(sig, label, int(seed), chosen, perts, [*names, *user], results, scored.signatures,
                        tolerances, reasons, examples, texts, scored.scores, hib, time.perf_counter() - start,
                        scored.seconds)


def _refuse_pairwise(plan: ScoringPlan | None) -> None:
    pairs = [f.cls.family for f in plan.families if f.cls.pairwise] if plan is not None else []
    if pairs:
        raise InputError(f"{', '.join(pairs)} judge(s) pairs of captions, while the stress suite scores each "
                         "caption and its perturbations on their own: stress a judge that rates one caption "
                         "(clair, fleur, reffleur), or run pairwise judges with capeval bench")


def _given_plan(plan: ScoringPlan, scores, options, tokenizer: str) -> ScoringPlan:
    """``metrics=ScoringPlan.build(...)``: the plan holds the options, tokenizer and scores files."""
    given = [k for k, v in (("scores", scores), ("options", options)) if v is not None]
    if given:
        raise InputError(f"pass {' and '.join(given)} in the plan (ScoringPlan.build(..., {given[0]}=...)) "
                         "or without one, not both")
    if tokenizer not in ("ptb", plan.tokenizer):
        raise InputError(f"tokenizer {tokenizer!r} differs from the plan's {plan.tokenizer!r}; the plan holds it")
    if not plan.metrics and not plan.columns:
        raise InputError("the plan holds no metrics and no scores files")
    return plan


def _metric_names(metrics, scores, export) -> list[str]:
    """The requested output names (a user's metric registered under its name); metric names,
    user metrics and callables, or a :class:`ScoringPlan`."""
    from ..metrics.user import as_metric_names

    if isinstance(metrics, str):
        metrics = metrics.split(",")
    if metrics is not None and not isinstance(metrics, Iterable):
        raise InputError(f"metrics={metrics!r}: expected metric names, user metrics or callables, "
                         "or a ScoringPlan")
    names = list(dict.fromkeys(n.strip() for n in as_metric_names(
        [m for m in (metrics or []) if not isinstance(m, str) or m.strip()])))
    if not names and not scores and export is None:
        raise InputError("no metrics requested")
    return names


def _check_numbers(seed, n_resamples) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed={seed!r} must be an integer")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise InputError(f"n_resamples={n_resamples!r} must be a positive integer")


def _signature(label: str, n_items: int, seed: int, parser, n_resamples: int, perts: Sequence[str] = ()) -> str:
    """The suite's signature: what every number of the run depends on besides the metric."""
    if parser is None:
        from ..data.distractors import SpacyParser

        parser = SpacyParser()
    describe = getattr(parser, "describe", None)
    return signature_line("stress", suite=SUITE_VERSION, source=label, items=n_items, seed=seed,
                              rules=P.rule_digest(perts), parser=describe() if callable(describe) else "injected",
                              wordnet="3.0", tie=TIE_TOL, same=f"{SAME_FRACTION}sd", bs=n_resamples, ci=CI_LEVEL)


def _statistics(scored: Scored, texts: dict[str, list[str | None]], perts: list[str], hib: dict[str, bool],
                n_resamples: int, seed: int) -> tuple[dict[str, dict[str, Cell]], dict[str, float]]:
    results: dict[str, dict[str, Cell]] = {}
    tolerances: dict[str, float] = {}
    for m, better in hib.items():
        control = scored.scores[m][CONTROL]
        tolerances[m] = same_tolerance(control)
        results[m] = {}
        for p in perts:
            applicable = np.array([t is not None for t in texts[p]], dtype=bool)
            results[m][p] = cell(control, scored.scores[m][p], applicable, P.BY_NAME[p].expected,
                                 higher_is_better=better, tolerance=tolerances[m], n_resamples=n_resamples,
                                 seed=seed)
    return results, tolerances
