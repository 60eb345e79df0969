"""Features of capeval's ``learned`` metric: registered metric scores, reference-count invariant.

Most caption metrics grow with the number of references (BLEU's clipped counts, ROUGE-L's and
BERTScore's max over references), so a model trained where captions have 4–5 references
would see out-of-range features on ABSTRACT-50S (48 references) or PASCAL-50S with all 50.
Here a unit with more than ``max_refs`` references is scored against disjoint groups of at
most ``max_refs`` (its references in the given order, split into equal-sized consecutive
groups) and each feature is the mean over the groups. Every reference still counts, and a
feature keeps the scale it has with ``max_refs`` references. With ``max_refs`` or fewer
references nothing changes.

Two text features need no metric: the candidate's length in tokens and its ratio to the mean
reference length (both after the model's tokenizer).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..outputs import atomic_open
from .features import EMBPROD, LENGTH, LENGTH_RATIO, TEXT_FEATURES, Feature, FeatureMatrix, extract, label, uses_df

EMB_DIM = 384

#: The shipped model's features (``ranker_model.DEFAULT_FEATURES``, preset ``default``): scores
#: that need no Java and no METEOR resources, so ``learned`` runs with the ``semantic`` and
#: ``bertscore`` extras and SPICE-py's WordNet (``capeval models install wordnet``).
#: Its BERTScore features take each token's true best match (``padding_floor=false``): with
#: bert_score's batch padding floor a row's value depends on the rows batched with it, so the
#: model could not be scored chunk by chunk (docs/LEARNED.md, "Streaming").
DEFAULT_SPEC = ("bleu1+bleu2+bleu3+bleu4+rouge_l+cider_d+wmd+wembsim"
                "+bertscore_p(padding_floor=false)+bertscore_r(padding_floor=false)+bertscore_f(padding_floor=false)"
                "+sentsim_max+sentsim_mean+sentsim_centroid+spice")

#: Optional extras (need Java for METEOR; WordNet for SPICE-py).
EXTRA: dict[str, Feature] = {"meteor": Feature("meteor"), "spice": Feature("spice")}


def ref_groups(n_refs: int, max_refs: int) -> list[range]:
    """Consecutive, equal-sized (±1) groups of at most ``max_refs`` reference positions."""
    if max_refs < 1:
        raise InputError(f"max_refs must be at least 1, got {max_refs}")
    k = -(-n_refs // max_refs)  # ceil
    bounds = np.linspace(0, n_refs, k + 1).round().astype(int)
    return [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def reference_units(cands: Sequence[str], refs: Sequence[Sequence[str]], max_refs: int | None
                    ) -> tuple[list[int], list[str], list[list[str]]]:
    """Each candidate's sub-units, one per reference group: (owner candidate, candidate,
    references) of every sub-unit, in order. A candidate with at most ``max_refs`` references
    (or ``max_refs=None``) is one sub-unit, unchanged."""
    owner: list[int] = []
    sub_c: list[str] = []
    sub_r: list[list[str]] = []
    for i, (c, rs) in enumerate(zip(cands, refs)):
        groups = [range(len(rs))] if max_refs is None or len(rs) <= max_refs else ref_groups(len(rs), max_refs)
        for g in groups:
            owner.append(i)
            sub_c.append(c)
            sub_r.append([rs[j] for j in g])
    return owner, sub_c, sub_r


def _text_features(cands: Sequence[str], refs: Sequence[Sequence[str]], tokenizer: str) -> dict[str, np.ndarray]:
    from ..text import tokenize_corpus

    ct, rt = tokenize_corpus(cands, refs, tokenizer)
    length = np.array([len(c.split()) for c in ct], dtype=float)
    ref_len = np.array([np.mean([len(r.split()) for r in rs]) for rs in rt], dtype=float)
    return {LENGTH: length, LENGTH_RATIO: length / np.maximum(ref_len, 1.0)}


def _embprod(cands: Sequence[str], refs: Sequence[Sequence[str]], cache=None) -> np.ndarray:
    """(units × EMB_DIM); stored in ``cache`` (a ScoreCache) as one array when given."""
    if cache is not None and getattr(cache, "enabled", False):
        from ..service.cache import corpus_digest
        from ..resources.encoders import resolve_encoder, weights_revision

        key = "embprod-" + corpus_digest(cands, refs)[:32] + "-" + weights_revision(resolve_encoder(None).location)
        path = Path(cache.directory) / "embeddings" / f"{key}.npy"
        if path.is_file():
            try:
                arr = np.load(path, allow_pickle=False)
                if arr.shape == (len(cands), EMB_DIM):
                    return arr
            except (OSError, ValueError):
                pass  # a damaged file is recomputed
        arr = _embprod(cands, refs)
        with atomic_open(path, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)
        return arr
    from ..metrics.sentsim import embed
    from ..resources.encoders import load_encoder, resolve_encoder

    tokenizer, model = load_encoder(resolve_encoder(None).location)
    distinct = list(dict.fromkeys([*cands, *(r for rs in refs for r in rs)]))
    where = {s: i for i, s in enumerate(distinct)}
    E = embed(tokenizer, model, distinct)
    if E.shape[1] != EMB_DIM:
        raise InputError(f"embprod expects {EMB_DIM}-d embeddings, the encoder gives {E.shape[1]}")
    out = np.empty((len(cands), EMB_DIM))
    for i, (c, rs) in enumerate(zip(cands, refs)):
        centroid = E[[where[r] for r in rs]].mean(axis=0)
        nrm = np.linalg.norm(centroid)
        out[i] = E[where[c]] * (centroid / nrm if nrm > 0 else centroid)
    return out


def compute(candidates: Sequence[str], references: Sequence[Sequence[str]], features: Sequence[Feature], *,
            max_refs: int | None = 5, tokenizer: str = "ptb", cache=None, progress=None,
            precomputed: Mapping[str, tuple[np.ndarray, str]] | None = None,
            images: Sequence[str] | None = None, df=None) -> FeatureMatrix:
    """Raw feature matrix (one row per candidate), reference groups averaged (module docstring).

    ``max_refs=None`` scores every unit against all its references at once. ``precomputed``
    maps metric names to (per-candidate scores, signature) already computed on exactly these
    candidates and references with default options and ``tokenizer``; they are used instead of
    scoring again when no unit had to be split into reference groups. ``images`` (one path per
    candidate) reach the features that read images (an image metric, a user's scores file).
    ``df`` (a CIDEr ``DocumentFrequency``) is the df of the features that take one
    (:func:`capeval.learn.features.extract`).
    """
    from ..validation import validate_corpus

    cands, refs = validate_corpus(candidates, references, empty_refused_by="a learned model's features")
    features = tuple(features)
    owner, sub_c, sub_r = reference_units(cands, refs, max_refs)
    owner_a = np.asarray(owner)
    counts = np.bincount(owner_a, minlength=len(cands)).astype(float)
    metric_feats = tuple(f for f in features if f.metric not in TEXT_FEATURES)
    sigs: dict[str, str] = {}
    cached: dict[str, bool] = {}
    cols: dict[Feature, np.ndarray] = {}
    if precomputed and len(sub_c) == len(cands):
        for f in metric_feats:
            # with a given df, a df feature is scored with it, not taken from the call's own CIDEr-D
            if not f.options and f.metric in precomputed and not (df is not None and uses_df(f)):
                scores, sig = precomputed[f.metric]
                cols[f] = np.asarray(scores, dtype=float) * f.scale
                sigs[label(f)] = sig
                cached[label(f)] = False
        metric_feats = tuple(f for f in metric_feats if f not in cols)
    if metric_feats:
        fm = extract(sub_c, sub_r, metric_feats, tokenizer=tokenizer, cache=cache, progress=progress,
                     images=None if images is None else [images[i] for i in owner], df=df)
        for j, f in enumerate(metric_feats):
            cols[f] = np.bincount(owner_a, weights=fm.X[:, j], minlength=len(cands)) / counts
        sigs.update(fm.signatures)
        cached.update(fm.cached)
    emb = None
    for f in features:
        if f.metric == EMBPROD:
            if emb is None:
                emb = _embprod(sub_c, sub_r, cache)
            cols[f] = np.bincount(owner_a, weights=emb[:, dict(f.options)["dim"]], minlength=len(cands)) / counts
            sigs.setdefault(EMBPROD, "embprod|model:sentence-transformers/all-MiniLM-L6-v2|pool:mean-last")
    text = None
    for f in features:
        if f.metric in (LENGTH, LENGTH_RATIO):
            if text is None:
                text = _text_features(sub_c, sub_r, tokenizer)
            cols[f] = np.bincount(owner_a, weights=text[f.metric], minlength=len(cands)) / counts
            sigs[label(f)] = f"{f.metric}|tok:{tokenizer}"
    X = np.column_stack([cols[f] for f in features]) if features else np.zeros((len(cands), 0))
    return FeatureMatrix(X, features, sigs, cached)


# ``sentsim_centroid(model=mpnet)``: the form :func:`capeval.learn.features.label` prints.
_WITH_OPTIONS = re.compile(r"([a-z0-9_]+)\((.*)\)")


def _parse_options(text: str, item: str) -> tuple[tuple[str, Any], ...]:
    opts = []
    for kv in text.split(";"):
        k, sep, v = kv.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise InputError(f"feature {item!r}: options must read name(key=value;key=value)")
        v = v.strip()
        opts.append((k.strip(), {"true": True, "false": False}.get(v, v)))  # flags are booleans
    return tuple(sorted(opts))


def parse(spec: str | Sequence[str]) -> tuple[Feature, ...]:
    """``default`` (:data:`DEFAULT_SPEC`), ``default+meteor+length``, a metric with family
    options (``sentsim_centroid(model=mpnet)``) or a list of metric names / text features."""
    if isinstance(spec, str):
        # Split on + and , outside parentheses only.
        spec = re.sub(r"\(([^)]*)\)", lambda m: "(" + m.group(1).replace(",", ";") + ")", spec)
        parts = [p.strip() for p in re.split(r"[+,]", spec) if p.strip()]
    else:
        parts = [str(p).strip() for p in spec if str(p).strip()]
    out: list[Feature] = []
    for p in parts:
        if p == "default":
            out.extend(parse(DEFAULT_SPEC))
        elif p in EXTRA:
            out.append(EXTRA[p])
        elif p == "cider_d":
            out.append(Feature("cider_d", scale=0.1))
        elif p == EMBPROD:
            out.extend(Feature(EMBPROD, (("dim", k),)) for k in range(EMB_DIM))
        elif (m := _WITH_OPTIONS.fullmatch(p)) is not None:
            out.append(Feature(m.group(1), _parse_options(m.group(2), p)))
        else:
            out.append(Feature(p))
    if not out:
        raise InputError(f"no features in {spec!r}")
    from ..metrics.registry import family_for

    for f in out:
        if f.metric not in TEXT_FEATURES:
            family_for(f.metric)
    return tuple(dict.fromkeys(out))
