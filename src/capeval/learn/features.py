"""Feature vectors for learned metrics, computed by the registered metrics.

A feature is one metric output (``meteor``, ``wmd``, ``bleu1`` ...) with the family options it
was computed with and a fixed pre-scale (NNEval divides CIDEr by 10, docs/NNEVAL.md, Features). The
list is data, saved inside every model, so a model scores new captions with exactly the
features it was trained on; each feature's training-time signature is saved next to it.

Scaling: min-max to [-1, 1] with bounds fitted on the training rows and saved with the model.
A model clips values outside the training range to its bounds (``MinMax.transform(clip=True)``)
and reports how many it clipped: a ReLU network would otherwise extrapolate linearly into
regions it never saw (a 48-reference benchmark against 4-reference training rows gave
below-chance rankings).

Reference policy: ``extract(..., refs="cap")`` etc. computes the features against reference
subsets of at most ``max_refs`` (``capeval.learn.refsets``) and averages them per candidate.
"""
from __future__ import annotations

import functools

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .refsets import DEFAULT_K, expand


@dataclass(frozen=True)
class Feature:
    """One column: ``metric`` output, its family ``options``, multiplied by ``scale``."""

    metric: str
    options: tuple[tuple[str, Any], ...] = ()
    scale: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "options": dict(self.options), "scale": self.scale}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Feature":
        try:
            return cls(str(d["metric"]), tuple(sorted(dict(d.get("options", {})).items())),
                       float(d.get("scale", 1.0)))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"bad feature description {d!r}: {e}") from None


# NNEval uses unit-normalised word vectors for WMD (gensim init_sims; docs/SEMANTIC.md, WMD).
_WMD_NNEVAL = (("norm", True),)

#: NNEval's eight features in the paper's order (docs/NNEVAL.md, Features).
NNEVAL_FEATURES: tuple[Feature, ...] = (
    Feature("meteor"),
    Feature("wmd", _WMD_NNEVAL),
    Feature("bleu1"),
    Feature("bleu2"),
    Feature("bleu3"),
    Feature("bleu4"),
    Feature("spice"),
    Feature("cider_d", scale=0.1),
)

#: LCEval's features that capeval computes (docs/NNEVAL.md, Model and training): BLEU scores stand in for the
#: clipped precisions, the always-zero ROUGE-1 and the HWCM columns are left out.
LCEVAL_FEATURES: tuple[Feature, ...] = (
    Feature("bleu1"), Feature("bleu2"), Feature("bleu3"), Feature("bleu4"),
    Feature("rouge_l"), Feature("meteor"), Feature("wmd", _WMD_NNEVAL), Feature("spice"),
    Feature("cider_d", scale=0.1), Feature("wembsim", (("combine", "max"),)),
)

#: Optional extras a user can append (``capeval train nneval --features``).
EXTRA_FEATURES: dict[str, Feature] = {
    "rouge_l": Feature("rouge_l"),
    "wembsim": Feature("wembsim", (("combine", "max"),)),
    "bertscore_f": Feature("bertscore_f"),
}

PRESETS = {"nneval": NNEVAL_FEATURES, "lceval": LCEVAL_FEATURES}

#: Pseudo-feature: candidate length in PTB tokens (not a registered metric).
LENGTH = "length"
LENGTH_RATIO = "length_ratio"
#: Element-wise product of the candidate's sentence embedding and the normalised centroid of its
#: references' embeddings (packaged all-MiniLM-L6-v2, mean pooling). Its sum is the
#: ``sentsim_centroid`` cosine; a linear model over its dimensions learns a diagonal metric that
#: reweights what the cosine compares. One feature per dimension: ``embprod(dim=k)``.
EMBPROD = "embprod"
#: The ranker's text features (``capeval.learn.ranker_features``): computed by the model from
#: the texts, never by a registered metric, even one a user registered under the same name.
TEXT_FEATURES = (LENGTH, LENGTH_RATIO, EMBPROD)


def feature_tokens(features: Sequence[Feature]) -> str:
    """The score-cache tokens of the families the features come from (METEOR's converted
    resources, SPICE-py's revision...), so a learned family's cached scores are not served
    after one of its features would change; empty when no feature family has a token."""
    from ..errors import UnknownMetricError
    from ..metrics.registry import family_for

    parts: dict[str, str] = {}
    for f in features:
        if f.metric in TEXT_FEATURES:  # the ranker's own text features (length...): no family, even
            continue                   # when a user registered a metric of that name
        try:
            family = family_for(f.metric)
        except UnknownMetricError:
            continue
        token = family.cache_token(dict(f.options))
        if token:
            parts[label(f)] = token
    return ";".join(f"{k}={v}" for k, v in sorted(parts.items()))


def parse_features(spec: str | Sequence[str] | Sequence[Feature]) -> tuple[Feature, ...]:
    """A preset name (``nneval``, ``lceval``), ``nneval+rouge_l+length``, or a list of names."""
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.replace(",", "+").split("+") if p.strip()]
    else:
        parts = list(spec)
    out: list[Feature] = []
    for p in parts:
        if isinstance(p, Feature):
            out.append(p)
        elif p in PRESETS:
            out.extend(PRESETS[p])
        elif p in EXTRA_FEATURES:
            out.append(EXTRA_FEATURES[p])
        elif p == LENGTH:
            out.append(Feature(LENGTH))
        else:
            out.append(Feature(p))
    if not out:
        raise InputError(f"no features in {spec!r}")
    from ..metrics.registry import family_for

    for f in out:
        if f.metric != LENGTH:
            family_for(f.metric)  # unknown names fail here, listing the registered metrics
    seen = set()
    for f in out:
        if f in seen:
            raise InputError(f"feature {f.metric!r} listed twice")
        seen.add(f)
    return tuple(out)


@dataclass
class FeatureMatrix:
    """Raw (pre-scaled, not min-max normalised) features, one row per candidate."""

    X: np.ndarray
    features: tuple[Feature, ...]
    signatures: dict[str, str] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)


def _length(candidates: Sequence[str], tokenizer: str) -> np.ndarray:
    from ..text import tokenize

    return np.array([len(t.split()) for t in tokenize(list(candidates), tokenizer)], dtype=float)


def uses_df(f: Feature) -> bool:
    """Whether the feature's family takes CIDEr's document frequencies (``Metric.uses_df``)."""
    from ..metrics.registry import family_for

    return f.metric != LENGTH and family_for(f.metric).uses_df


def extract(candidates: Sequence[str], references: Sequence[Sequence[str]], features: Sequence[Feature], *,
            tokenizer: str = "ptb", cache=None, progress=None, refs: str = "all",
            max_refs: int = DEFAULT_K, images: Sequence[str] | None = None, df=None) -> FeatureMatrix:
    """Score every feature once (grouped by option set, so a family runs once per set).

    ``cache`` is a :class:`capeval.service.cache.ScoreCache`; feature columns are stored under
    the content hash of the texts, metric, variant and options, so retraining and benchmark
    runs reuse each other's scores.

    ``refs`` is a reference policy of :mod:`capeval.learn.refsets` (default ``"all"``: the
    references as given, one row per candidate as before). Other policies score every
    (candidate, reference subset) unit in one call and average the unit rows per candidate.

    ``images`` (one image path per candidate) let a feature be an image metric (``clip_s``) or
    a user metric that reads images or scores from a file (``capeval.metrics.user``); a feature
    that needs images refuses to run without them.

    ``df`` (a CIDEr ``DocumentFrequency``) is given to the features whose family takes one
    (CIDEr-D...) instead of the df of the units scored together: the pre-pass state of a
    chunked run, or a df file. Those features then bypass ``cache`` (its keys cannot name
    the df object).
    """
    from ..validation import validate_corpus

    cands, ref_lists = validate_corpus(candidates, references, empty_refused_by="a learned model's features")
    features = tuple(features)
    ex = expand(cands, ref_lists, refs, max_refs)
    unit_images = None
    if images is not None:
        images = list(images)
        if len(images) != len(cands):
            raise InputError(f"{len(images)} images for {len(cands)} candidates")
        unit_images = [images[i] for i in ex.owner]  # a candidate's reference-subset units share its image
    fm = _extract_units(ex.candidates, ex.references, features, tokenizer=tokenizer, cache=cache,
                        progress=progress, images=unit_images, df=df)
    if refs == "all":
        return fm
    return FeatureMatrix(ex.pool(fm.X), features, fm.signatures, fm.cached)


@functools.lru_cache(maxsize=64)
def _feature_calls(features: tuple[Feature, ...], tokenizer: str, has_df: bool) -> tuple[tuple, ...]:
    """The scoring calls of a feature set, resolved once per process (a streamed learned model
    extracts features chunk after chunk): ``(plan, features, with_df)`` per consistent options
    map. Every family appears with one option set per call, so default-option features share
    one call (tokenization runs once). With a given df, the features that take it are scored in
    calls of their own (their plans get the df per call)."""
    from ..metrics.registry import family_for
    from ..plan import ScoringPlan

    calls: list[tuple[dict[str, tuple], list[Feature], bool]] = []
    for f in features:
        if f.metric == LENGTH:
            continue
        cls = family_for(f.metric)
        with_df = has_df and cls.uses_df
        for fam_opts, fs, call_df in calls:
            if call_df == with_df and fam_opts.get(cls.family, f.options) == f.options:
                fam_opts[cls.family] = f.options
                fs.append(f)
                break
        else:
            calls.append(({cls.family: f.options}, [f], with_df))
    out = []
    for fam_opts, fs, with_df in calls:
        names = list(dict.fromkeys(f.metric for f in fs))
        opts = {fam: dict(o) for fam, o in fam_opts.items() if o}
        out.append((ScoringPlan.build(names, tokenizer=tokenizer, options=opts), tuple(fs), with_df))
    return tuple(out)


def _extract_units(cands: list[str], refs: list[list[str]], features: tuple[Feature, ...], *, tokenizer: str,
                   cache, progress, images: list[str] | None = None, df=None) -> FeatureMatrix:
    from ..metrics.registry import get_family
    from ..service.scoring import score_units

    cols: dict[Feature, np.ndarray] = {}
    sigs: dict[str, str] = {}
    cached: dict[str, bool] = {}
    for f in features:
        if f.metric == LENGTH:
            cols[f] = _length(cands, tokenizer)
            sigs[label(f)] = f"length|tok:{tokenizer}"
    calls = _feature_calls(tuple(features), tokenizer, df is not None)
    if not all(f.cls is get_family(f.family) for plan, _, _ in calls for f in plan.families):
        _feature_calls.cache_clear()  # a user metric redefined since (a notebook): resolve again
        calls = _feature_calls(tuple(features), tokenizer, df is not None)
    for plan, fs, with_df in calls:
        if with_df:
            plan = plan.with_options({f.family: {**(f.options or {}), "df": df} for f in plan.families})
        got = score_units(cands, refs, plan=plan, cache=None if with_df else cache, progress=progress, images=images)
        for f in fs:
            cols[f] = np.asarray(got.per_caption[f.metric], dtype=float) * f.scale
            sigs[label(f)] = got.signatures[f.metric]
            cached[label(f)] = got.details["cached"][f.metric]
    X = np.column_stack([cols[f] for f in features]) if features else np.zeros((len(cands), 0))
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise InputError(f"feature {label(features[j])} is {X[i, j]!r} for candidate {i} ({cands[i]!r}); "
                         "learned models need finite features")
    return FeatureMatrix(X, features, sigs, cached)


def label(f: Feature) -> str:
    """Column name: ``wmd(norm=True)``, ``cider_d/10``."""
    s = f.metric
    if f.options:  # parentheses, not brackets: rich would read [..] in a signature as markup
        s += "(" + ",".join(f"{k}={v}" for k, v in f.options) + ")"
    if f.scale != 1.0:
        s += f"/{1 / f.scale:g}" if f.scale < 1 else f"*{f.scale:g}"
    return s


@dataclass(frozen=True)
class MinMax:
    """x → 2·(x − lo)/(hi − lo) − 1 per column, bounds from the training rows.

    A column constant on the training rows carries no information; it maps to 0 rather
    than dividing by zero.
    """

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> "MinMax":
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] == 0:
            raise InputError(f"cannot fit min-max bounds on an array of shape {X.shape}")
        return cls(X.min(axis=0), X.max(axis=0))

    def transform(self, X: np.ndarray, clip: bool = False) -> np.ndarray:
        """``clip=True`` first limits each column to its training range [lo, hi]."""
        X = self._check(X)
        if clip:
            X = np.clip(X, self.lo, self.hi)
        span = self.hi - self.lo
        safe = np.where(span > 0, span, 1.0)
        return np.where(span > 0, 2.0 * (X - self.lo) / safe - 1.0, 0.0)

    def outside(self, X: np.ndarray) -> np.ndarray:
        """Boolean mask of the values outside the training range (what ``clip=True`` changes)."""
        X = self._check(X)
        return (X < self.lo) | (X > self.hi)

    def _check(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.lo.shape[0]:
            raise InputError(f"expected {self.lo.shape[0]} feature columns, got shape {X.shape}")
        return X
