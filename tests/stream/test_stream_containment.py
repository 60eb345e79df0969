"""A metric that raises ``SystemExit`` or ``GeneratorExit`` (a plug-in's ``sys.exit()``) while
it is built, in its pre-pass or while scoring is an error naming it, in this process and in a
streamed worker: the run never ends as if it had succeeded."""
from __future__ import annotations

import numpy as np
import pytest

import capeval
from capeval.errors import InputError
from capeval.metrics.base import Metric, OutputInfo
from capeval.metrics.registry import register_user
from capeval.result import MetricScores

from ._rows import make_rows, write_jsonl


class _Exits(Metric):
    """Exits where ``WHERE`` says (class attribute, so workers unpickle the same behaviour)."""

    family = variant = "exits_where"
    outputs = (OutputInfo("exits_where", "exits_where", "exits_where", (0.0, 1.0)),)
    WHERE = ""

    def __init__(self):
        if self.WHERE == "init":
            raise SystemExit(0)

    def prepass(self, candidates, references):
        if self.WHERE == "prepass":
            raise GeneratorExit("stop")
        return None

    def compute(self, candidates, references):
        if self.WHERE == "compute":
            raise SystemExit(0)
        v = np.zeros(len(candidates))
        return MetricScores(corpus={"exits_where": 0.0}, per_caption={"exits_where": v}, signature_fields={})


class ExitsInInit(_Exits):
    family = variant = "exits_init"
    outputs = (OutputInfo("exits_init", "exits_init", "exits_init", (0.0, 1.0)),)
    WHERE = "init"


class ExitsInCompute(_Exits):
    family = variant = "exits_compute"
    outputs = (OutputInfo("exits_compute", "exits_compute", "exits_compute", (0.0, 1.0)),)
    WHERE = "compute"


class ExitsInPrepass(_Exits):
    family = variant = "exits_prepass"
    outputs = (OutputInfo("exits_prepass", "exits_prepass", "exits_prepass", (0.0, 1.0)),)
    WHERE = "prepass"


for _cls in (ExitsInInit, ExitsInCompute, ExitsInPrepass):
    register_user(_cls)


CASES = [("exits_init", "while it was built"), ("exits_compute", "while scoring"), ("exits_prepass", "in its pre-pass")]


# In memory a family's pre-pass is part of its own scoring: only streamed runs call it apart.
@pytest.mark.parametrize("name, when, jobs", [(n, w, j) for n, w in CASES for j in (0, 1, 2)
                                              if not (j == 0 and n == "exits_prepass")])
def test_an_exit_is_an_error_naming_the_metric(tmp_path, name, when, jobs):
    rows = make_rows(12, seed=3)
    pattern = rf"metric '{name}' raised (SystemExit|GeneratorExit)\(.*\) {when}"
    if jobs == 0:  # in memory
        with pytest.raises(InputError, match=pattern):
            capeval.score([r["candidate"] for r in rows], [r["references"] for r in rows], [name])
        return
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    with pytest.raises(InputError, match=pattern):
        capeval.score_stream(src, [name], chunk_size=5, jobs=jobs)
