"""Metric families. See :mod:`capeval.metrics.registry`."""
from .base import Metric, OutputInfo
from .registry import family_for, get_family, list_metrics, register

__all__ = ["Metric", "OutputInfo", "family_for", "get_family", "list_metrics", "register"]
