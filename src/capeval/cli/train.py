"""``capeval train nneval|lceval|linear --out model.npz``: train a learned metric."""
from __future__ import annotations

from pathlib import Path

import typer

from ..errors import CapevalError
from ._console import error, escape, say


def train_cmd(
    model: str = typer.Argument(..., help="nneval (8-72-72-2 MLP), lceval (softmax regression on LCEval's "
                                "features), linear (ridge combination of NNEval's features) — all trained on "
                                "human vs machine captions — or learned (capeval's ranker, trained on human "
                                "quality judgments)."),
    out: Path = typer.Option(..., "--out", "-o", help="Model file to write (.npz, no pickles)."),
    seed: int = typer.Option(0, "--seed", help="Seed for initialisation, shuffling, machine-caption choice "
                             "and the split; the same seed gives the same file."),
    validation: str = typer.Option("expert", "--validation", help="expert: early stopping on Kendall tau-c vs "
                                   "Flickr8k-Expert (the paper's protocol); split: on 10% of the training "
                                   "images; none: last epoch."),
    features: str | None = typer.Option(None, "--features", help="Feature list: a preset (nneval, lceval) "
                                        "and/or metric names joined by '+', e.g. nneval+rouge_l+length."),
    refs: str = typer.Option("all", "--refs", help="Reference policy at training and use: all (as given), cap "
                             "(the --max-refs references with the smallest sha256), groups (mean over disjoint "
                             "groups of --max-refs), per-ref (mean over single references)."),
    max_refs: int | None = typer.Option(None, "--max-refs", help="nneval: references per unit for --refs cap/groups "
                                        "(default 4, as training rows have); learned: reference group size "
                                        "(default 5)."),
    clip: bool = typer.Option(True, "--clip/--no-clip", help="Clip features to the training range when the "
                              "model scores (recorded in the model file)."),
    monotone: bool = typer.Option(False, "--monotone/--no-monotone", help="Constrain the network so its score "
                                  "never falls when a feature rises (not in the paper; MLP models)."),
    negatives: str | None = typer.Option(None, "--negatives", help="nneval/lceval/linear: add synthetic machine "
                                         "rows built from the training images' captions by the distractor "
                                         "rules, comma-separated: object-list, shuffle (not in the paper)."),
    negative_slots: int | None = typer.Option(None, "--negative-slots", help="With --negatives: build them for "
                                              "the first N of the 3 human candidates per image (default 3)."),
    max_images: int | None = typer.Option(None, "--max-images", help="Train on this many images (a stable "
                                          "subsample) instead of all eligible ones."),
    epochs: int | None = typer.Option(None, "--epochs", help="Maximum epochs (MLP models)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Feature score cache (default "
                                          "$CAPEVAL_CACHE or ~/.cache/capeval)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute every feature."),
    root: Path | None = typer.Option(None, "--root", help="Data directory (default $CAPEVAL_DATA)."),
    kind: str | None = typer.Option(None, "--kind", help="learned: linear (pairwise logistic, monotone), "
                                    "pairwise_ls or mlp (default: the shipped model's)."),
    benchmarks: str | None = typer.Option(None, "--benchmarks", help="learned: human-judgment benchmarks to "
                                          "train on, comma-separated (default: all of them); distractors-train adds the "
                                          "distractor tasks on Flickr8k training images as comparisons."),
    allow_eval_sets: bool = typer.Option(False, "--allow-eval-sets", help="learned: let --benchmarks name the "
                                         "evaluation sets (thumb, nebula, polaris); the model is then seen on them."),
    images: Path | None = typer.Option(None, "--images", help="learned: directory holding the benchmarks' images "
                                       "(searched recursively by file name), for features that read images (an "
                                       "image metric or a user metric)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out file (refused by default)."),
    mkdirs: bool = typer.Option(False, "--mkdirs", help="Create missing folders of the output paths (refused by default: a mistyped path must not create folders)."),
) -> None:
    """Train a learned metric: nneval/lceval/linear on Tanti et al.'s machine vs human captions
    (evaluation images held out); learned on human quality judgments."""
    from ..outputs import check_outputs

    try:  # before training: a refused output means nothing is trained and nothing written
        check_outputs([out], overwrite=overwrite, mkdirs=mkdirs, mkdirs_flag="--mkdirs")
    except CapevalError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if model == "learned":
        _train_learned(out, seed=seed, features=features, kind=kind, benchmarks=benchmarks, max_refs=max_refs,
                       cache_dir=cache_dir, no_cache=no_cache, root=root, allow_eval_sets=allow_eval_sets,
                       images=images)
        return
    if images is not None:
        typer.echo(f"error: --images is for `capeval train learned`; {model} trains on Tanti et al.'s captions, "
                   "whose images are not named", err=True)
        raise typer.Exit(2)
    _train_on_machine_captions(model, out, seed=seed, validation=validation, features=features, refs=refs,
                               max_refs=max_refs, clip=clip, monotone=monotone, negatives=negatives,
                               negative_slots=negative_slots, max_images=max_images, epochs=epochs,
                               cache_dir=cache_dir, no_cache=no_cache, root=root)


def _train_on_machine_captions(model: str, out: Path, *, seed, validation, features, refs, max_refs, clip, monotone,
                               negatives, negative_slots, max_images, epochs, cache_dir, no_cache, root) -> None:
    """nneval, lceval or linear: human vs machine captions of Tanti et al.'s training images."""
    from rich.console import Console

    from ..service.cache import ScoreCache
    from ..learn.builder import load_training_set
    from ..learn.train import make_recipe, train_recipe

    err = Console(stderr=True)
    try:
        overrides = {"max_epochs": epochs} if epochs is not None else {}
        if monotone:
            overrides["monotone"] = True
        recipe = make_recipe(model, features=features, seed=seed, refs=refs, max_refs=max_refs or 4, clip=clip,
                             **overrides)
        with err.status("building training rows …") as status:
            training = load_training_set(root, seed=seed, max_images=max_images,
                                         negatives=[n.strip() for n in (negatives or "").split(",") if n.strip()],
                                         negative_slots=negative_slots)
            trained = train_recipe(recipe, training, validation=validation, root=root,
                                   cache=ScoreCache(cache_dir, enabled=not no_cache),
                                   progress=lambda msg: status.update(escape(msg)))
        sha = trained.save(out)
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None
    v = trained.meta["validation"]
    best = v.get("best_score")
    say(err, f"{model}: {training.info['rows']} rows from {training.info['images']} images; validation "
             f"{validation}" + (f", best {v.get('statistic')} {best:.4f} at epoch {v.get('best_epoch')}"
                                if best is not None else ""))
    typer.echo(f"{out}\tsha256:{sha}")


def _train_learned(out: Path, *, seed, features, kind, benchmarks, max_refs, cache_dir, no_cache, root,
                   allow_eval_sets: bool = False, images: Path | None = None) -> None:
    from rich.console import Console

    from ..service.cache import ScoreCache
    from ..learn import lobo
    from ..learn import ranker_features as rf
    from ..learn.judgments import JUDGMENT_BENCHMARKS
    from ..learn.ranker_model import DEFAULT_FEATURES, DEFAULT_HYPER, DEFAULT_KIND, DEFAULT_MAX_REFS

    err = Console(stderr=True)
    kind = kind or DEFAULT_KIND
    names = [b.strip() for b in (benchmarks or ",".join(JUDGMENT_BENCHMARKS)).split(",") if b.strip()]
    max_refs = max_refs or DEFAULT_MAX_REFS
    try:
        feats = rf.parse(features or DEFAULT_FEATURES)
        with err.status("features …") as status:
            blocks = lobo.load_blocks(names, feats, cache=ScoreCache(cache_dir, enabled=not no_cache),
                                      max_refs=max_refs, root=root, progress=lambda msg: status.update(escape(msg)),
                                      allow_eval_sets=allow_eval_sets, images_dir=images)
        trained = lobo.train(kind, list(blocks.values()), feats, seed=seed, max_refs=max_refs,
                             hyper=DEFAULT_HYPER if kind == DEFAULT_KIND else None,
                             meta={"name": out.stem, "selected_on": [], "features_spec": features or DEFAULT_FEATURES})
        sha = trained.save(out)
    except CapevalError as e:
        error(err, e)
        raise typer.Exit(2) from None
    say(err, f"learned ({kind}): trained on {', '.join(names)}; capeval bench refuses it there "
             f"(--allow-seen to report it marked)")
    typer.echo(f"{out}\tsha256:{sha}")


def register(app: typer.Typer) -> None:
    app.command("train")(train_cmd)
