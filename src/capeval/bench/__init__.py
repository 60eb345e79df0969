"""Benchmark orchestration: which metrics on which benchmark, the score cache, tables.

- :mod:`.runner` — ``run_benchmark(name, metrics)`` loads a table (``capeval.data``), scores
  its units once (:mod:`.scoring`, through the content-hash :mod:`.cache`) and applies the
  statistics of ``capeval.meta``;
- :mod:`.tables` — the stable JSON contract, Markdown/LaTeX/rich tables, and
  :func:`.tables.report_data`, the plain-data hook for the HTML report;
- :mod:`.combination` — metric combination search on a correlation benchmark.

Nothing here reimplements a statistic; the CLI is ``capeval bench`` / ``capeval combine``.
"""
