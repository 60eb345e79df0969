"""capeval: image-caption metrics, exact and fast, with meta-evaluation against people."""
from ._version import __version__
from .api import score
from .metrics.registry import list_metrics
from .result import Result
from .stream import score_stream

__all__ = ["__version__", "score", "score_stream", "list_metrics", "Result", "CiderDReward"]


def __getattr__(name: str):
    # Imported on first use: most callers never need the reward API.
    if name == "CiderDReward":
        from .reward import CiderDReward

        return CiderDReward
    raise AttributeError(f"module 'capeval' has no attribute {name!r}")
