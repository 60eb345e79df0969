"""Training data for human-vs-machine classifiers (NNEval's recipe, docs/NNEVAL.md, Training data).

Per image: 3 human candidates and 3 machine candidates, each scored against 4 references of
that image, label 1 = human, 0 = machine.

- Human candidate k (k = 0, 1, 2) is the image's k-th reference caption; its references are the
  other 4 captions, never itself (the paper's rule).
- Machine candidate k uses *the same 4 references* as human candidate k. Each machine candidate
  thus has a human twin scored against an identical reference set, so the classifier cannot
  learn anything from which references a class tends to get.
- The 3 machine candidates are distinct captions chosen from the image's 12 Tanti et al.
  captions (4 architectures × 3 runs), skipping any that equal one of its human captions,
  in the order of sha256(seed, image, system): stable under subsetting, no global RNG state.
- Candidates are brought to the machine captions' surface form (lower case, punctuation
  tokens dropped) so a raw-text feature cannot tell the classes apart by a capital letter or
  a final period. References keep their original form; both classes share them.

Synthetic negatives (opt-in, ``negatives=``; off in the paper's recipe): extra machine rows built
from a training image's own captions by the distractor generator's pure rules
(:mod:`capeval.data.distractor_tasks`), because degenerate outputs such as a bare list of the
references' nouns are machine output that the 2014-era captioners of the pool never wrote.
For human candidate k (k < ``negative_slots``), ``object-list`` adds the noun list of its 4
references and ``shuffle`` its own words in a seeded random order, each scored against those
same 4 references and labelled machine. They use training images only, so the held-out rule below covers them.

Images of every evaluation set (Flickr8k-Expert and -CF images, COMPOSITE, PASCAL-50S, the
Tanti 200-image human evaluation, the distractor tasks' source images) are left out. Images are compared by a canonical id (``coco:<id>``, ``flickr:<photo id>``,
``voc:<name>``): Flickr30k contains Flickr8k photos under a different file name.
"""
from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

N_HUMAN = 3
N_MACHINE = 3
HUMAN, MACHINE = 1, 0
#: Synthetic machine-labelled rows ``build_training_set(negatives=...)`` can add.
NEGATIVES = ("object-list", "shuffle")

_COCO = re.compile(r"COCO_[a-z]+\d{4}_0*(\d+)(?:\.jpg)?$")
_VOC = re.compile(r"(\d{4}_\d{6})(?:\.jpg)?$")
_FLICKR = re.compile(r"(\d+)(?:_[0-9a-f]+)?(?:\.jpg)?(?:\.\d+)?$")
_PUNCT_TOKEN = re.compile(r"^[^\w]+$")


def canonical_image(name: str, kind: str | None = None) -> str:
    """``COCO_val2014_000000391895.jpg`` → ``coco:391895``; Flickr8k ``1000268201_693b08cb0e.jpg``
    and Flickr30k ``1000268201.jpg`` → ``flickr:1000268201``; VOC ``2008_005747.jpg`` →
    ``voc:2008_005747``. ``kind`` ("coco", "flickr", "voc") skips detection."""
    base = str(name).rsplit("/", 1)[-1]
    order = {"coco": (_COCO,), "voc": (_VOC,), "flickr": (_FLICKR,), None: (_COCO, _VOC, _FLICKR)}
    if kind not in order:
        raise InputError(f"unknown image kind {kind!r} for {name!r}; one of coco, flickr, voc")
    for pat in order[kind]:
        m = pat.match(base)
        if m:
            prefix = {_COCO: "coco", _VOC: "voc", _FLICKR: "flickr"}[pat]
            return f"{prefix}:{int(m.group(1)) if pat is not _VOC else m.group(1)}"
    raise InputError(f"cannot read an image id from {name!r}")


def machine_style(text: str) -> str:
    """Lower case, punctuation-only tokens dropped, single spaces (the Tanti captions' form)."""
    return " ".join(t for t in text.lower().split() if not _PUNCT_TOKEN.match(t))


#: Benchmarks whose images must never be trained on.
EVALUATION_SETS = ("flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "tanti-human200", "distractors")


def evaluation_images(root: Path | str | None = None, names: Sequence[str] = EVALUATION_SETS) -> dict[str, set[str]]:
    """Canonical image ids of each evaluation benchmark, from its loader."""
    return {k: set(v) for k, v in _evaluation_images(None if root is None else str(root), tuple(names)).items()}


@functools.lru_cache(maxsize=4)  # loading the four tables takes seconds; the files do not change
def _evaluation_images(root: str | None, names: tuple[str, ...]) -> dict[str, frozenset[str]]:
    from .. import data

    out: dict[str, frozenset[str]] = {}
    for name in names:
        if name == "distractors":
            # Every source image of the distractor tasks (correct captions and donors come from
            # them); read from the image lists, so no spaCy parse is needed.
            from ..data._common import resolve_root
            from ..data.distractors import DATASETS, split_images

            base = resolve_root(root)
            out[name] = frozenset(canonical_image(k.split("/", 1)[1], "flickr")
                                  for ds in DATASETS for k in split_images(base, ds, "test"))
            continue
        table = data.load(name, root)
        if name == "tanti-human200":
            out[name] = frozenset(canonical_image(g, "coco") for g in table.groups)
        elif name == "pascal50s":
            out[name] = frozenset(canonical_image(i, "voc") for i in table.extra["image"])
        elif name == "composite":
            out[name] = frozenset(canonical_image(g, "coco" if g.startswith("coco/") else "flickr")
                                  for g in table.groups)
        else:
            out[name] = frozenset(canonical_image(g, "flickr") for g in table.groups)
    return out


@dataclass
class TrainingSet:
    """Rows of (candidate, 4 references, label); ``images`` are canonical ids."""

    candidates: list[str]
    references: list[list[str]]
    labels: np.ndarray
    images: list[str]
    sources: list[str]  # "human:<k>" or the Tanti system id "<arch>_<run>"
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.candidates)

    def subset(self, rows: Sequence[int] | np.ndarray) -> "TrainingSet":
        rows = np.asarray(rows, dtype=int)
        return TrainingSet([self.candidates[i] for i in rows], [self.references[i] for i in rows],
                           self.labels[rows], [self.images[i] for i in rows], [self.sources[i] for i in rows],
                           dict(self.info))


def _rank(seed: int, *parts: str) -> str:
    return hashlib.sha256("\x00".join((str(seed), *parts)).encode("utf-8")).hexdigest()


def build_training_set(
    pool: Iterable[tuple[str, str, Sequence[str], dict[str, str]]],
    exclude: set[str],
    *,
    seed: int = 0,
    n_human: int = N_HUMAN,
    n_machine: int = N_MACHINE,
    max_images: int | None = None,
    negatives: Sequence[str] = (),
    negative_slots: int | None = None,
    parse: Callable[[Sequence[str]], Sequence] | None = None,
) -> TrainingSet:
    """Rows from a :func:`capeval.data.training_pool` (``(image, dataset, humans, machines)``).

    ``max_images`` keeps that many eligible images, chosen by hash order (a stable subsample).
    ``negatives`` (a subset of :data:`NEGATIVES`) adds synthetic machine rows per human
    candidate k < ``negative_slots`` (default: every human candidate; module docstring); they
    need ``parse``, the distractor generator's parser (texts →
    :class:`capeval.data.distractor_tasks.Token` tuples).
    """
    negatives, slots = _check_negatives(negatives, negative_slots, parse, n_human, n_machine)
    eligible, skipped = _eligible(pool, exclude, n_human, max_images, seed)
    parses = _parses(eligible, parse) if negatives else {}
    cands, refs, labels, images, sources = [], [], [], [], []
    short = 0
    made = dict.fromkeys(negatives, 0)
    for cid, img, ds, humans, machines in eligible:
        human_forms = {machine_style(h) for h in humans}
        picked = _pick_machines(machines, human_forms, seed, cid, n_machine)
        short += n_machine - len(picked)
        for k in range(n_human):
            slot_refs = [h for j, h in enumerate(humans) if j != k]
            cands.append(machine_style(humans[k]))
            refs.append(slot_refs)
            labels.append(HUMAN)
            images.append(cid)
            sources.append(f"human:{k}")
            if k < len(picked):
                cands.append(picked[k][1])
                refs.append(slot_refs)
                labels.append(MACHINE)
                images.append(cid)
                sources.append(picked[k][0])
            for kind in (negatives if k < slots else ()):
                text = _negative(kind, seed, cid, k, humans, parses)
                if text is None or text in human_forms:
                    continue  # too few nouns/words, or it reads like one of the image's captions
                cands.append(text)
                refs.append(slot_refs)
                labels.append(MACHINE)
                images.append(cid)
                sources.append(f"negative:{kind}:{k}")
                made[kind] += 1
    if not cands:
        raise InputError("no training rows: every pool image is excluded or the pool is empty")
    by_ds: dict[str, int] = {}
    for _, _, ds, _, _ in eligible:
        by_ds[ds] = by_ds.get(ds, 0) + 1
    info = {"images": len(eligible), "images_by_dataset": dict(sorted(by_ds.items())),
            "excluded_images": skipped, "rows": len(cands),
            "human": int(sum(labels)), "machine": len(labels) - int(sum(labels)),
            "missing_machine": short, "seed": seed, "n_human": n_human, "n_machine": n_machine,
            "refs_per_candidate": "other-4-of-5 (machine k shares human k's references)",
            "candidate_text": "machine-style (lower case, no punctuation tokens)"}
    if negatives:
        from ..data.distractors import RULES_VERSION

        # The rules' recorded name predates the module's rename to distractor_tasks; it stays so
        # that models trained before and after with the same rules record the same rules.
        info.update(negatives=list(negatives), negative_rows=made, negative_slots=slots,
                    negative_rules=f"capeval.data.distractor_rules rules:{RULES_VERSION}")
        if hasattr(parse, "describe"):
            info["negative_parser"] = parse.describe()
    return TrainingSet(cands, refs, np.asarray(labels, dtype=np.int64), images, sources, info)


def _check_negatives(negatives, negative_slots, parse, n_human: int, n_machine: int) -> tuple[tuple[str, ...], int]:
    """The synthetic negatives asked for (each once) and the human slots that get them."""
    if n_machine > n_human:
        raise InputError(f"n_machine ({n_machine}) > n_human ({n_human}): each machine candidate borrows "
                         "the references of one human candidate")
    negatives = tuple(dict.fromkeys(negatives))
    unknown = [n for n in negatives if n not in NEGATIVES]
    if unknown:
        raise InputError(f"unknown synthetic negative {unknown[0]!r}; one of {', '.join(NEGATIVES)}")
    if negatives and parse is None:
        raise InputError("synthetic negatives need a parser (parse=...)")
    if negative_slots is not None and not negatives:
        raise InputError("negative_slots given without negatives: nothing would use it")
    slots = n_human if negative_slots is None else int(negative_slots)
    if not 0 <= slots <= n_human:
        raise InputError(f"negative_slots must be in 0..{n_human} (the human candidates per image), got {slots}")
    return negatives, slots


def _eligible(pool, exclude: set[str], n_human: int, max_images: int | None, seed: int):
    """The pool's images outside ``exclude`` (a stable subsample of ``max_images`` of them, in
    image order), and how many were excluded."""
    eligible = []
    skipped = 0
    for img, ds, humans, machines in pool:
        cid = canonical_image(img, "coco" if ds == "coco" else "flickr")
        if cid in exclude:
            skipped += 1
            continue
        if len(humans) < n_human + 1:
            raise InputError(f"training image {img} ({ds}) has {len(humans)} human captions; "
                             f"need at least {n_human + 1} (a candidate plus references)")
        eligible.append((cid, img, ds, humans, machines))
    if max_images is not None:
        eligible = sorted(eligible, key=lambda e: _rank(seed, "image", e[0]))[:max_images]
        eligible.sort(key=lambda e: e[0])
    return eligible, skipped


def _pick_machines(machines: dict[str, str], human_forms: set[str], seed: int, cid: str,
                   n_machine: int) -> list[tuple[str, str]]:
    """Up to ``n_machine`` (system, caption) pairs in seeded order: distinct, non-empty, and
    none reading like one of the image's human captions."""
    picked: list[tuple[str, str]] = []
    for sys_id in sorted(machines, key=lambda s: _rank(seed, cid, s)):
        text = machine_style(machines[sys_id])
        if text and text not in human_forms and text not in {t for _, t in picked}:
            picked.append((sys_id, text))
        if len(picked) == n_machine:
            break
    return picked


def _parses(eligible, parse) -> dict[str, tuple]:
    """Parse of every human caption of the eligible images, in one call (one cache entry)."""
    texts = list(dict.fromkeys(h for _, _, _, humans, _ in eligible for h in humans))
    parsed = list(parse(texts))
    if len(parsed) != len(texts):
        raise InputError(f"parse returned {len(parsed)} parses for {len(texts)} captions")
    return dict(zip(texts, parsed))


def _negative(kind: str, seed: int, cid: str, k: int, humans: Sequence[str], parses: dict) -> str | None:
    """Synthetic machine candidate ``kind`` for human candidate ``k``, in machine style."""
    from ..data.distractor_tasks import object_list, shuffled

    if kind == "object-list":  # the nouns of the slot's 4 references, as the distractor task builds it
        text = object_list([parses[h] for j, h in enumerate(humans) if j != k])
    else:  # "shuffle": candidate k's own words reordered, seeded per (seed, image, slot)
        rng = np.random.default_rng(int(_rank(seed, "shuffle", cid, str(k))[:16], 16))
        text = shuffled(parses[humans[k]], rng)
    return None if text is None else (machine_style(text) or None)


def load_training_set(root: Path | str | None = None, *, seed: int = 0, max_images: int | None = None,
                      datasets: Sequence[str] = ("flickr8k", "flickr30k", "coco"),
                      negatives: Sequence[str] = (), negative_slots: int | None = None) -> TrainingSet:
    """The Tanti pool minus every evaluation image (docs/NNEVAL.md, Training data); ``negatives``
    adds synthetic machine rows parsed with the distractor tasks' spaCy pipeline."""
    from .. import data

    held_out = evaluation_images(root)
    exclude = set().union(*held_out.values())
    parse = None
    if negatives:
        from ..data.distractors import SpacyParser

        parse = SpacyParser()
    ts = build_training_set(data.training_pool(root, datasets), exclude, seed=seed, max_images=max_images,
                            negatives=negatives, negative_slots=negative_slots, parse=parse)
    ts.info["held_out"] = {k: len(v) for k, v in held_out.items()}
    ts.info["datasets"] = list(datasets)
    return ts


def split_by_image(images: Sequence[str], fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, validation rows): whole images go to validation, by hash order."""
    if not 0 < fraction < 1:
        raise InputError(f"validation fraction must be in (0, 1), got {fraction}")
    distinct = sorted(set(images), key=lambda i: _rank(seed, "split", i))
    n_val = max(1, int(round(fraction * len(distinct))))
    val = set(distinct[:n_val])
    mask = np.array([i in val for i in images])
    return np.flatnonzero(~mask), np.flatnonzero(mask)
