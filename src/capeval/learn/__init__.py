"""Learned metrics: features from registered metrics, human-vs-machine training data,
numpy models (NNEval MLP, LCEval-style softmax regression, ridge combination) and their
pickle-free ``.npz`` files. See docs/NNEVAL.md.
"""
from .features import LCEVAL_FEATURES, NNEVAL_FEATURES, Feature, MinMax, parse_features
from .model import LearnedModel

__all__ = ["Feature", "LCEVAL_FEATURES", "LearnedModel", "MinMax", "NNEVAL_FEATURES", "parse_features"]
