"""capeval inside other frameworks' metric APIs (:mod:`capeval.integrations.torchmetrics`).

Each module imports its framework at import time; none is imported by ``import capeval``."""
