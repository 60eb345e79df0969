"""capeval: image-caption metrics, exact and fast, with meta-evaluation against people."""
from ._version import __version__
from .api import score
from .metrics.registry import list_metrics
from .plan import ScoringPlan
from .result import Result

__all__ = ["__version__", "score", "score_stream", "list_metrics", "bench", "stress", "Result", "CiderDReward",
           "UserMetric", "ScoringPlan"]


def bench(name: str, metrics=None, **kwargs):
    """Meta-evaluate metrics on a human-judgment benchmark, as ``capeval bench`` does; returns a
    :class:`capeval.metaeval.runner.BenchResult`.

    ``metrics`` holds metric names and/or your own metrics: a :class:`UserMetric` subclass or a
    callable ``fn(candidates, references, images) -> one float per candidate``. Keyword
    arguments are those of :func:`capeval.metaeval.runner.run_benchmark` (``root``,
    ``images_dir``, ``scores={"name": "scored.jsonl"}``, ``options``, ``bootstrap``...)."""
    from .metaeval.runner import DEFAULT_METRICS, run_benchmark

    if metrics is None:
        metrics = () if kwargs.get("scores") else DEFAULT_METRICS
    elif isinstance(metrics, str):
        metrics = metrics.split(",")
    return run_benchmark(name, list(metrics), **kwargs)


def __getattr__(name: str):
    # Imported on first use: most callers never stream, nor need the reward API.
    if name == "score_stream":
        from .stream import score_stream

        return score_stream
    if name == "CiderDReward":
        from .reward import CiderDReward

        return CiderDReward
    if name == "stress":
        # The subpackage itself, callable as capeval.stress(...): a function of that name would be
        # replaced by the subpackage as soon as it is imported.
        import importlib

        return importlib.import_module(f"{__name__}.stress")
    if name == "UserMetric":
        from .metrics.user import UserMetric

        return UserMetric
    raise AttributeError(f"module 'capeval' has no attribute {name!r}")
