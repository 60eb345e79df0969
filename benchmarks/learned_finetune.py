"""Leave-one-benchmark-out evaluation of a fine-tuned MiniLM bi-encoder (``learn.encoder_finetune``),
alone and as one more feature of the linear ranker.

For each held-out benchmark H:

* alone — the encoder fine-tuned on the other benchmarks (units sharing an image or a candidate
  text with H removed, as in ``lobo.leave_one_out``) scores H; compared with the best single
  metric on H and with ``sentsim_centroid`` (the untrained starting point).
* as a feature — the linear ranker is trained on the same training blocks with one more column,
  the encoder score; on H the column is the "alone" model's score. On a training benchmark T the
  column must not come from a model that saw T's rows. Two ways (--crossfit):
  - ``pair``: the encoder fine-tuned without H and without T (overlaps with both removed). One
    encoder per unordered pair {H, T} serves both folds: 6 + 15 encoders in all. Nothing of H
    reaches the ranker.
  - ``lobo``: the encoder fine-tuned without T alone (the "alone" model of fold T), so no extra
    encoder is trained. That encoder did see H's ratings, so H's labels reach the ranker through
    the one weight it fits on the column (how well those encoders rank the training
    benchmarks): a slight, indirect leak, recorded in each record.
  The linear ranker without the column is refitted in the same run for the comparison.

Each encoder's scores are kept in --work (not committed) so a stopped run resumes.

    python benchmarks/learned_finetune.py [--phase alone|feature|both] [--steps 160]
        [--benchmarks ...] [--out benchmarks/results/learned_finetune.json]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from capeval._version import __version__
from capeval.service.cache import ScoreCache
from capeval.learn import encoder_finetune as ef
from capeval.learn import lobo
from capeval.learn import ranker_features as rf
from capeval.learn.features import Feature, label
from capeval.learn.judgments import JUDGMENT_BENCHMARKS, overlap_mask
from capeval.learn.ranker_model import DEFAULT_FEATURES

RESULTS = Path(__file__).with_name("results")
ENC = Feature("ft_minilm")  # the encoder column; a metric feature, so its weight stays >= 0


def _log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def _train_blocks(blocks, exclude: tuple[str, ...]):
    """Benchmarks not in ``exclude``, minus units overlapping any excluded benchmark."""
    held = [blocks[n].judgments for n in exclude]
    out, dropped = [], {}
    for name, b in blocks.items():
        if name in exclude:
            continue
        drop = overlap_mask(b.judgments, held)
        dropped[name] = int(drop.sum())
        sub = b.subset(~drop) if drop.any() else b
        if len(sub.judgments) and (sub.judgments.kind == "rating" or len(sub.judgments.pairs)):
            out.append(sub)
    return out, dropped


def _encoder_scores(key: tuple[str, ...], blocks, cfg, tok, base, work: Path, score_on: tuple[str, ...]):
    """Scores on ``score_on`` of the encoder fine-tuned without ``key`` (cached in ``work``)."""
    tag = hashlib.sha256(json.dumps([sorted(key), asdict(cfg), sorted(blocks)]).encode()).hexdigest()[:16]
    path = work / f"enc-{'+'.join(sorted(key))}-{tag}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            info = json.loads(str(z["info"]))
            return {n: np.array(z[n]) for n in score_on}, info
    train_blocks, dropped = _train_blocks(blocks, key)
    _log(f"fine-tune without {'+'.join(key)} on {[b.judgments.name for b in train_blocks]}")
    res = ef.train(tok, base, [b.judgments for b in train_blocks], cfg, progress=lambda m: _log("  " + m))
    t0 = time.process_time()
    scores = {n: ef.score(tok, res.model, blocks[n].judgments.candidates, blocks[n].judgments.references,
                          max_refs=cfg.max_refs, max_seq_len=cfg.max_seq_len) for n in score_on}
    info = {**res.info(), "score_seconds": round(time.process_time() - t0, 1), "excluded": list(key),
            "trained_on": [b.judgments.name for b in train_blocks], "dropped_overlap": dropped,
            "train_rows": {b.judgments.name: len(b.judgments) for b in train_blocks}}
    _log(f"  trained {info['train_seconds']}s cpu, scored {info['score_seconds']}s cpu")
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, info=np.array(json.dumps(info)), **scores)
    os.replace(tmp, path)
    return scores, info


def _singles(held, features, baselines):
    metric_cols = [k for k, f in enumerate(features) if f.metric not in rf.TEXT_FEATURES]
    j = held.judgments
    singles = {label(features[k]): lobo.headline(j, held.X[:, k]) for k in metric_cols}
    scores = {label(features[k]): held.X[:, k] for k in metric_cols}
    for m, s in baselines.items():
        singles[m], scores[m] = lobo.headline(j, s), np.asarray(s, dtype=float)
    return singles, scores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase", choices=("alone", "feature", "both"), default="both")
    ap.add_argument("--benchmarks", default=",".join(JUDGMENT_BENCHMARKS))
    ap.add_argument("--features", default=DEFAULT_FEATURES)
    ap.add_argument("--baselines", default="meteor,spice")
    ap.add_argument("--crossfit", choices=("pair", "lobo"), default="pair")
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--work", type=Path, default=Path("/tmp/capeval_finetune"))
    ap.add_argument("--out", type=Path, default=RESULTS / "learned_finetune.json")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)  # the machine is shared: one core per job
    from capeval.resources.encoders import load_encoder, resolve_encoder, weights_revision

    names = [n for n in args.benchmarks.split(",") if n]
    features = rf.parse(args.features)
    cache = ScoreCache()
    blocks = lobo.load_blocks(names, features, cache=cache)
    baselines: dict[str, dict[str, np.ndarray]] = {n: {} for n in names}
    extra = [m for m in args.baselines.split(",") if m]
    if extra:
        bfeats = rf.parse(extra)
        for n, b in blocks.items():
            fm = rf.compute(b.judgments.candidates, b.judgments.references, bfeats, cache=cache)
            baselines[n] = {label(f): fm.X[:, k] for k, f in enumerate(bfeats)}
    enc = resolve_encoder(None)
    tok, base = load_encoder(enc.location)
    cfg = ef.FinetuneConfig(steps=args.steps, lr=args.lr, seed=args.seed)
    args.work.mkdir(parents=True, exist_ok=True)
    out = {
        "capeval": __version__, "python": platform.python_version(), "torch": torch.__version__,
        "threads": torch.get_num_threads(), "encoder": enc.name, "encoder_revision": weights_revision(enc.location),
        "features": [label(f) for f in features], "baselines": extra, "config": asdict(cfg),
        "resamples": args.resamples,
        "load_average_at_start": list(os.getloadavg()),
        "note": ("train_seconds/score_seconds are process CPU seconds of one thread on a shared 2-core "
                 "machine; other jobs ran at the same time (load averages recorded), so they are not timings"),
        "alone": [], "feature": [], "encoders": {},
    }

    def write():
        out["load_average_at_end"] = list(os.getloadavg())
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, default=float) + "\n")

    lobo_scores: dict[str, np.ndarray] = {}
    for h in names:  # phase "alone": one encoder per held-out benchmark
        s, info = _encoder_scores((h,), blocks, cfg, tok, base, args.work, (h,))
        lobo_scores[h] = s[h]
        out["encoders"][h] = info
        if args.phase == "feature":
            continue
        j = blocks[h].judgments
        singles, single_scores = _singles(blocks[h], features, baselines[h])
        best = max(singles, key=singles.get)
        val = lobo.headline(j, s[h])
        rec = {"held_out": h, "statistic": lobo.statistic_of(j), "units": len(j),
               "trained_on": info["trained_on"], "train_rows": info["train_rows"],
               "dropped_overlap": info["dropped_overlap"], "seed": cfg.seed,
               "train_seconds": info["train_seconds"], "score_seconds": info["score_seconds"],
               "encoder_alone": val, "best_single": best, "best_single_value": singles[best],
               "delta_vs_best": val - singles[best],
               "sentsim_centroid_untrained": singles.get("sentsim_centroid"),
               "delta_vs_untrained": val - singles["sentsim_centroid"] if "sentsim_centroid" in singles else None,
               "vs_best": lobo.compare(j, s[h], single_scores[best], n_resamples=args.resamples, seed=cfg.seed,
                                       names=("ft_minilm", best)),
               "loss_first_fifth": info["loss_first_fifth"], "loss_last_fifth": info["loss_last_fifth"]}
        out["alone"] = [r for r in out["alone"] if r["held_out"] != h] + [rec]
        _log(f"{h}: alone {val:.4f} best {best} {singles[best]:.4f} ({val - singles[best]:+.4f}); "
             f"untrained sentsim_centroid {singles.get('sentsim_centroid', float('nan')):.4f}")
        write()
    if args.phase == "alone":
        write()
        return

    # phase "feature": with --crossfit pair, one encoder per unordered pair, ordered so folds
    # complete one by one
    out["crossfit"] = args.crossfit
    pair_scores: dict[frozenset, dict[str, np.ndarray]] = {}
    for h in names:
        for t in names:
            if t == h or args.crossfit != "pair":
                continue
            key = frozenset((h, t))
            if key not in pair_scores:
                pair = tuple(sorted(key))
                s, info = _encoder_scores(pair, blocks, cfg, tok, base, args.work, pair)
                pair_scores[key] = s
                out["encoders"]["+".join(pair)] = info
        train_blocks, dropped = _train_blocks(blocks, (h,))
        aug = []
        for b in train_blocks:
            t = b.judgments.name
            full = pair_scores[frozenset((h, t))][t] if args.crossfit == "pair" else lobo_scores[t]
            keep = ~overlap_mask(blocks[t].judgments, [blocks[h].judgments])
            col = full[keep]
            if col.shape[0] != b.X.shape[0]:
                raise RuntimeError(f"{t}: encoder column has {col.shape[0]} rows, block {b.X.shape[0]}")
            aug.append(lobo.Block(b.judgments, np.column_stack([b.X, col]), b.signatures))
        held = blocks[h]
        held_aug = np.column_stack([held.X, lobo_scores[h]])
        j = held.judgments
        singles, single_scores = _singles(held, features, baselines[h])
        best = max(singles, key=singles.get)
        t0 = time.process_time()
        plain = lobo.train("linear", train_blocks, features, seed=cfg.seed)
        withenc = lobo.train("linear", aug, (*features, ENC), seed=cfg.seed)
        fit_s = time.process_time() - t0
        sp, sw = plain.predict(held.X), withenc.predict(held_aug)
        vp, vw = lobo.headline(j, sp), lobo.headline(j, sw)
        rec = {"held_out": h, "statistic": lobo.statistic_of(j), "units": len(j), "seed": cfg.seed,
               "trained_on": [b.judgments.name for b in train_blocks], "dropped_overlap": dropped,
               "train_rows": {b.judgments.name: len(b.judgments) for b in train_blocks},
               "encoder_feature": ("cross-fitted: training benchmark T scored by the encoder fine-tuned "
                                   "without H and T; H scored by the encoder fine-tuned without H"
                                   if args.crossfit == "pair" else
                                   "training benchmark T scored by the encoder fine-tuned without T (it saw "
                                   "H's labels: they reach the ranker through the encoder column's weight); "
                                   "H scored by the encoder fine-tuned without H"),
               "encoder_alone": lobo.headline(j, lobo_scores[h]),
               "linear": vp, "linear_plus_encoder": vw, "best_single": best, "best_single_value": singles[best],
               "delta_linear_vs_best": vp - singles[best], "delta_linear_plus_encoder_vs_best": vw - singles[best],
               "delta_linear_plus_encoder_vs_linear": vw - vp,
               "ranker_fit_seconds": round(fit_s, 1),
               "weights_linear_plus_encoder": {label(f): float(w) for f, w in
                                               zip((*features, ENC), withenc.params[0])},
               "clipped_fraction": float(withenc.scaler.clipped(held_aug).mean()),
               "vs_best": lobo.compare(j, sw, single_scores[best], n_resamples=args.resamples, seed=cfg.seed,
                                       names=("linear+ft_minilm", best)),
               "vs_linear": lobo.compare(j, sw, sp, n_resamples=args.resamples, seed=cfg.seed,
                                         names=("linear+ft_minilm", "linear"))}
        out["feature"] = [r for r in out["feature"] if r["held_out"] != h] + [rec]
        _log(f"{h}: linear {vp:.4f} linear+enc {vw:.4f} best {best} {singles[best]:.4f} "
             f"({vw - singles[best]:+.4f}; vs linear {vw - vp:+.4f}) w_enc {rec['weights_linear_plus_encoder'][label(ENC)]:.3f}")
        write()
    write()


if __name__ == "__main__":
    main()
