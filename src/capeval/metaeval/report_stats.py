"""The statistics the HTML report draws beyond the tables, computed (by :mod:`capeval.stats`)
before :mod:`capeval.metaeval.report` lays them out."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..stats.distractor_summary import DistractorSummary, summarize
from ..stats.experiments import MetricAgreement, metric_agreement
from .runner import BenchResult


@dataclass
class ReportStatistics:
    """Computed (by capeval.stats) before :mod:`capeval.metaeval.report` lays them out."""

    #: correlation benchmarks: metric–metric agreement and Williams p (None: < 2 metrics defined on every row)
    agreement: MetricAgreement | None = None
    #: the distractors benchmark: per-task mean / worst task per metric
    distractors: dict[str, DistractorSummary] = field(default_factory=dict)


def report_statistics(result: BenchResult, *, df: str, agreement: str) -> ReportStatistics:
    """The report's extra statistics for one result; ``df`` is the Williams df rule and
    ``agreement`` the metric–metric statistic."""
    out = ReportStatistics()
    if result.kind == "correlation" and result.human is not None:
        scores = {m: result.scores[m] for m in result.metrics if m in result.scores}
        out.agreement = metric_agreement(scores, result.human, statistic=agreement, df=df)
    elif result.kind == "pairwise" and result.protocol.get("dataset") == "distractors":
        out.distractors = {m: summarize(result.experiment.results[m]) for m in result.metrics}
    return out
