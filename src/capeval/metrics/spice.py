"""SPICE-style semantic propositional F-score ("spice"), with two backends.

``backend="py"`` (default, variant ``spice_py_spacy``): an *approximation* of SPICE 1.0 in
Python. Captions are parsed with spaCy, SPICE's scene-graph rules are applied to the parse, the
references of a unit are merged into one graph, and tuples match on lemma or shared WordNet 3.0
synset, with SPICE's merging, F-score and category rules (``capeval.scenegraph``). Numbers differ
from the original because the parser differs (spaCy vs Stanford CoreNLP 3.6.0); docs/SPICE.md
gives the measured gap.

``backend="jar"`` (variant ``spice_1.0_jar``): the original spice-1.0.jar from pycocoevalcap,
given Stanford CoreNLP 3.6.0 in ``$CAPEVAL_CORENLP_DIR``.

Outputs: ``spice`` (SPICE's ``All.f``: 0 when nothing matches or there are no tuples, never NaN)
and the subsets ``spice_object``, ``spice_attribute``, ``spice_relation``, ``spice_color``,
``spice_count`` (SPICE's "Cardinality"), ``spice_size``: NaN for a unit whose references have no
tuple of that kind. Corpus values: the mean over units; subsets skip NaN units, as the jar's own
summary does (NaN when every unit is NaN). The subsets declare that NaN as *undefined*
(``OutputInfo.undefined``), so ``capeval bench`` skips those rows the same way and names it in
the signature (``undef:skip|defined:K/N``) instead of refusing the table.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np

from ..errors import InputError, ResourceNotFound
from ..result import MetricScores
from ._limits import SPICE_MAX_CHARS, SPICE_MAX_WORDS, check_lengths
from .base import Metric, OutputInfo
from .registry import register
from .statistics import Aggregate, Statistics

CITATION = "Anderson et al., ECCV 2016 (SPICE)"
VARIANT_PY = "spice_py_spacy"
VARIANT_JAR = "spice_1.0_jar"
#: Revision of the Python backend's parse rules/lemmas; bumped whenever the same text can get
#: another score (2: "-es" lemma repair, "rides" -> "ride"). It is in the signature (``rev``)
#: and in the benchmark cache key, so scores cached by an older revision are never reused.
PY_REVISION = 2

_CATEGORY_OUTPUTS = (
    ("object", "spice_object", "objects"),
    ("attribute", "spice_attribute", "(object, attribute) tuples"),
    ("relation", "spice_relation", "(subject, relation, object) tuples"),
    ("color", "spice_color", "colour attributes"),
    ("count", "spice_count", "counting attributes (SPICE's Cardinality)"),
    ("size", "spice_size", "size attributes"),
)

_scorers: dict[tuple, object] = {}
_lock = threading.Lock()


def _py_scorer(model: str, synonyms: bool, wordnet_path, batch_size: int, n_process: int,
               parse_cache: bool | str = True):
    """One scorer per configuration and process: spaCy and WordNet take seconds to load."""
    key = (model, synonyms, str(wordnet_path), batch_size, n_process, str(parse_cache))
    with _lock:
        sc = _scorers.get(key)
        if sc is None:
            from ..scenegraph.scorer import PySpiceScorer

            sc = _scorers[key] = PySpiceScorer(model=model, synonyms=synonyms, wordnet_path=wordnet_path,
                                               batch_size=batch_size, n_process=n_process,
                                               parse_cache=parse_cache)
    return sc


def _mean(x: np.ndarray, skip_nan: bool) -> float:
    if skip_nan:
        finite = x[~np.isnan(x)]
        return float(np.mean(finite)) if finite.size else math.nan
    return float(np.mean(x))


class SpiceAggregate(Aggregate):
    """Per-row F-scores; corpus = their mean, the categories' over the rows where they are
    defined (not NaN)."""

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return dict(st.rows)

    def corpus(self, st: Statistics) -> dict[str, float]:
        corpus = {"spice": _mean(st.rows["spice"], skip_nan=False)}
        for _, name, _what in _CATEGORY_OUTPUTS:
            corpus[name] = _mean(st.rows[name], skip_nan=True)
        return corpus


@register
class Spice(Metric):
    """SPICE F-score over scene-graph tuples.

    Parameters
    ----------
    backend : {"py", "jar"}
        "py": spaCy + WordNet approximation (offline). "jar": the original spice-1.0.jar.
    synonyms : bool
        Match WordNet synonyms (SPICE default). False = SPICE's ``-noSynsets``.
    model : str
        spaCy pipeline name or path (py backend).
    wordnet : str, optional
        WordNet 3.0 database directory (py backend; default ``$CAPEVAL_WORDNET_DIR`` or
        /usr/share/wordnet).
    jar, corenlp : str, optional
        spice-1.0.jar and the CoreNLP 3.6.0 directory (jar backend; default
        ``$CAPEVAL_SPICE_JAR`` / pycocoevalcap's jar and ``$CAPEVAL_CORENLP_DIR``).
    n_process : int
        Worker processes that parse (py backend; CLI: ``-O spice.n_process=N``). Numbers do not depend on it.
    parse_cache : bool or str
        py backend: keep each text's parse, and WordNet's answers per word, on disk under
        ``capeval.paths.cache_root()/spice-py`` (True, default), in the given directory, or not
        (False). A text is parsed once per machine and parser; numbers do not depend on it.
    cache_dir, threads, timeout : jar backend options (``-cache`` is ignored on Java >= 16).
    """

    family = "spice"
    extras = ("semantic",)
    cache_resources = ("wordnet", "spice-jar", "corenlp-3.6.0")  # py backend: WordNet; jar backend: jars
    variant = VARIANT_PY
    text_input = "tokenized"
    jobs_option = "n_process"  # SPICE-py's spaCy parse processes
    outputs = (
        OutputInfo("spice", "spice", VARIANT_PY, (0.0, 1.0), True,
                   "F-score of scene-graph tuples (objects, attributes, relations) vs the merged "
                   "reference graph; WordNet synonyms match.", CITATION),
    ) + tuple(
        OutputInfo(name, "spice", VARIANT_PY, (0.0, 1.0), True,
                   f"SPICE F-score restricted to {what}; NaN when the references have none.", CITATION,
                   undefined=f"the references have no {what} (SPICE 1.0 reports NaN)")
        for _, name, what in _CATEGORY_OUTPUTS
    )

    @classmethod
    def missing_resources(cls, options: dict) -> str | None:
        """SPICE-py's WordNet database (its synonym matching reads it), named with the extras
        before any family scores; the jar backend finds its jars when it starts."""
        if options.get("backend", "py") != "py" or not options.get("synonyms", True):
            return None
        from ..resources.wordnet import wordnet_dir

        try:
            wordnet_dir(options.get("wordnet"))
        except ResourceNotFound as e:
            return str(e)
        return None

    def __init__(self, backend: str = "py", synonyms: bool = True, model: str | None = None,
                 wordnet: str | None = None, batch_size: int = 512, n_process: int = 1,
                 parse_cache: bool | str = True,
                 jar: str | None = None, corenlp: str | None = None, cache_dir: str | None = None,
                 threads: int | None = None, timeout: float | None = None):
        if backend not in ("py", "jar"):
            raise InputError(f"spice: backend must be 'py' or 'jar', got {backend!r}")
        self.backend = backend
        self.variant = VARIANT_PY if backend == "py" else VARIANT_JAR
        self.synonyms = bool(synonyms)
        from ..scenegraph.parser import DEFAULT_MODEL

        self.model = model or DEFAULT_MODEL
        self.wordnet = wordnet
        self.batch_size = batch_size
        self.n_process = n_process
        self.parse_cache = parse_cache
        self.jar, self.corenlp, self.cache_dir = jar, corenlp, cache_dir
        self.threads, self.timeout = threads, timeout
        self.last_stats: dict[str, float] = {}

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """The Python backend's revision (the jar's numbers do not depend on our code)."""
        return None if options.get("backend", "py") == "jar" else f"py-rev:{PY_REVISION}"

    def _compute_py(self, candidates, references):
        check_lengths("SPICE-py", candidates, references, SPICE_MAX_WORDS,
                      "parsing and matching a text of thousands of words takes minutes", SPICE_MAX_CHARS)
        sc = _py_scorer(self.model, self.synonyms, self.wordnet, self.batch_size, self.n_process,
                        self.parse_cache)
        arrays = sc.score(candidates, references)
        self.last_stats = dict(sc.stats)
        from ..resources.wordnet import WORDNET_VERSION

        fields = {"impl": "py", "rev": PY_REVISION, "parser": f"spacy-{sc.parser.spacy_version}",
                  "model": sc.parser.model_id, "wordnet": WORDNET_VERSION, "syn": self.synonyms}
        details = {"precision": arrays["precision"], "recall": arrays["recall"], "stats": self.last_stats}
        return arrays, fields, details

    def evaluations(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> list[dict]:
        """Per row and category ("all" and each of ``object``... ``size``): ``f``, ``pr``, ``re``,
        ``tp`` and the tuple counts ``n_cand``/``n_ref`` (py backend), the counts behind
        :meth:`compute`'s F-scores."""
        if self.backend != "py":
            raise InputError("spice: per-tuple counts come from the py backend only")
        if len(candidates) != len(references):
            raise InputError(f"spice: {len(candidates)} candidates but {len(references)} reference lists")
        check_lengths("SPICE-py", candidates, references, SPICE_MAX_WORDS,
                      "parsing and matching a text of thousands of words takes minutes", SPICE_MAX_CHARS)
        sc = _py_scorer(self.model, self.synonyms, self.wordnet, self.batch_size, self.n_process,
                        self.parse_cache)
        return sc.evaluations(candidates, references)

    def _compute_jar(self, candidates, references):
        from ..scenegraph.jar import run_spice_jar

        per_cat, fields = run_spice_jar(candidates, references, jar=self.jar, corenlp=self.corenlp,
                                        synonyms=self.synonyms, cache_dir=self.cache_dir,
                                        threads=self.threads, timeout=self.timeout)
        arrays = {k: np.asarray(v, dtype=float) for k, v in per_cat.items()}
        # SPICE's wrapper turns a missing All.f into NaN; it is otherwise never NaN.
        return arrays, fields, {}

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        if len(candidates) != len(references):
            raise InputError(
                f"spice: {len(candidates)} candidates but {len(references)} reference lists"
            )
        if self.backend == "py":
            arrays, fields, details = self._compute_py(candidates, references)
        else:
            arrays, fields, details = self._compute_jar(candidates, references)
        per_caption = {"spice": arrays["all"]}
        for cat, name, _ in _CATEGORY_OUTPUTS:
            per_caption[name] = arrays[cat]
        return Statistics(len(candidates), SpiceAggregate(), per_caption, {}, fields, details).scores()

    def aggregate(self, outputs: tuple[str, ...]) -> Aggregate:
        return SpiceAggregate()
