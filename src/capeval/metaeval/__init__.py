"""Benchmark orchestration: which metrics on which benchmark, tables and reports.

- :mod:`.runner` — ``run_benchmark(name, metrics)`` loads a table (``capeval.data``), scores
  its units once (``capeval.service``: ``score_units`` through the content-hash score cache)
  and applies the statistics of ``capeval.stats``;
- :mod:`.tables` — the stable JSON contract and Markdown/LaTeX/rich tables;
- :mod:`.report_stats` — ``report_statistics``: what a report shows beyond the tables;
- :mod:`.report` — the HTML report, which only renders;
- :mod:`.seen` — refuses or marks numbers of a learned metric on data it saw;
- :mod:`.combination` — metric combination search on a correlation benchmark.

Nothing here reimplements a statistic; the CLI is ``capeval bench`` / ``capeval combine``.
"""
