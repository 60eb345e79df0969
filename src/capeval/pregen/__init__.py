"""Pre-gen metrics (Tanti, Gatt & Muscat 2018): score a caption generator from how it ranks
the reference tokens under teacher forcing, without generating captions.

- ``tokens.TokenScores``: per-token (probability, rank) records, the engine's input;
- ``tiers.compute``: the 504 filter × sentence × image × dataset combinations;
  ``score`` returns them with their signature;
- ``adapters``: teacher-forced records from PyTorch / Hugging Face models (imports torch);
- ``stratify``, ``pipeline``: the reference's CIDEr strata and per-stratum scoring;
- ``results``, ``analysis``: the data.txt table and the R² analysis with the drop rule.

The where-image2 generators of the demonstration live outside the package, in
``benchmarks/demo_captioners/``. Only the numpy parts are imported here; torch loads with
``adapters``.
"""
from .signed_values import PregenResult, score
from .tiers import BEST, column_names, compute
from .tokens import TokenScores

__all__ = ["BEST", "PregenResult", "TokenScores", "column_names", "compute", "score"]
