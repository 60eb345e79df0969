"""What the families scored by a trained model share (``learned``, ``nneval``).

Both take the options ``cache``, ``df`` and ``long_text``; both count CIDEr's document
frequencies over their own reference units as their corpus pre-pass (:class:`UnitDf`, handed to
every chunk of a streamed run), report rows outside the training range through their statistics
(:func:`~capeval.learn.metric_support.ood_statistics`), and stream unless a feature's options
make a row depend on its neighbours. Each family says how it loads its model, how it groups a
row's references into units, and how it scores (``compute``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..metrics.base import Metric


class ModelFamily(Metric):
    """Base of a family scored by a trained model (not registered itself)."""

    text_input = "raw"  # features are tokenized by the model's own tokenizer
    # Given its pre-pass (prepass) a row's features depend on the row alone and the model
    # combines them row-locally (capeval.learn.rowlocal); a model whose features depend on
    # their batch-mates does not stream, and cannot_stream names the feature.
    streamable = True

    model: Any
    long_text: str

    @staticmethod
    def _load(model) -> Any:
        """The model of option ``model`` (None: the shipped one); a missing file is
        :class:`~capeval.errors.ResourceNotFound` naming it."""
        raise NotImplementedError

    def _unit_texts(self, candidates: Sequence[str], references: Sequence[Sequence[str]]):
        """``(unit candidates, unit reference lists)``: the rows as the model's features see them
        (its grouping of the references)."""
        raise NotImplementedError

    def _setup(self, cache: bool | str, df, long_text: str, refs: str) -> None:
        """The options every model family takes, checked, once ``self.model`` is loaded; ``refs``
        names its reference grouping in the pre-pass state's label."""
        from .features import uses_df
        from .metric_support import LONG_MODES, given_df, length_range
        from .ranker_features import TEXT_FEATURES

        if long_text not in LONG_MODES:
            raise InputError(f"{self.family}: long_text must be one of {', '.join(LONG_MODES)}, got {long_text!r}")
        if not isinstance(cache, (bool, str)):
            raise InputError(f"{self.family}: cache={cache!r} must be true/false or a directory")
        self.long_text = long_text
        self._cache_arg = cache
        self._df = given_df(self.family, df)
        self._df_features = any(uses_df(f) for f in self.model.features if f.metric not in TEXT_FEATURES)
        self._lengths = length_range(self.model)
        self._units = (f"{self.family}|refs:{refs}|tok:{self.model.tokenizer}"
                       + ("|sentences" if long_text == "sentences" else ""))

    @classmethod
    def cannot_stream(cls, options: dict) -> str | None:
        from .metric_support import stream_obstacle

        m = cls._load(options.get("model"))
        return stream_obstacle(cls.family, m.name, m.features)

    def prepass(self, candidates, references):
        """The df of this batch's reference units (a :class:`~capeval.learn.metric_support.UnitDf`),
        or None when no feature takes one or a df was given."""
        from .metric_support import batch_prepass, sentence_units

        def unit_texts(c, r):
            if self.long_text == "sentences":
                c, r, _ = sentence_units(c, r)
            return self._unit_texts(c, r)

        return batch_prepass(self._df, self._df_features, self._units, self.model.tokenizer, candidates, references,
                             unit_texts)

    @classmethod
    def prepass_options(cls, state) -> dict:
        return {"df": state}

    @classmethod
    def reads(cls, options: dict) -> tuple[str, ...]:
        """The model's feature metrics (not its own text features: length...); none when its file
        is missing (``cache_token`` names it)."""
        from ..errors import ResourceNotFound
        from .ranker_features import TEXT_FEATURES

        try:
            model = cls._load(options.get("model"))
        except ResourceNotFound:
            return ()
        return tuple(dict.fromkeys(f.metric for f in model.features if f.metric not in TEXT_FEATURES))

    def statistics(self, candidates, references, **kw):
        from .metric_support import ood_statistics

        return ood_statistics(self, self.family, self.model.name, self._lengths, candidates, references, **kw)
