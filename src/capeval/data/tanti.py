"""Tanti et al. (2018) where-image2 captions (SystemTable per test set), the 200-image human
evaluation of Tanti's thesis, and the per-image training pool (docs/DATA_FORMATS.md,
where-image2 captions and Tanti's human evaluation)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import InputError
from ._common import (TANTI_RESULTS, check_options, image_list, loose_key, need, read_lines, read_text,
                      references_for, reject_unknown, ws)
from .records import CorrelationTable, SystemTable

ARCHS = ("init", "pre", "par", "merge")
RUNS = (1, 2, 3)
_FOLDER = {"flickr8k": "flickr8k", "flickr30k": "flickr30k", "coco": "mscoco"}
HUMANEVAL = "machine_captions/tanti_phd_humaneval"
_METRIC_COLUMNS = ("CIDEr", "METEOR", "ROUGE_L", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4")


def _system_ids(include_human: bool) -> list[str]:
    ids = [f"{a}_{r}" for a in ARCHS for r in RUNS]
    return ids + ["human_1"] if include_human else ids


def _captions(root: Path, dataset: str, system: str, n: int, benchmark: str) -> list[str]:
    rel = f"{TANTI_RESULTS}/{_FOLDER[dataset]}_{system}/generated_captions.txt"
    lines = read_lines(need(root, rel, benchmark))
    if len(lines) != n:
        raise InputError(f"{benchmark}: {rel} has {len(lines)} lines for {n} images; line k must caption image k")
    return [ws(c) for c in lines]


def _published(root: Path, dataset: str) -> dict[str, dict[str, float]]:
    """The authors' own coco-pipeline scores per run (results.txt), for sanity checks."""
    path = root / TANTI_RESULTS / "results.txt"
    if not path.exists():
        return {}
    lines = read_lines(path)
    header = lines[0].split("\t")
    out = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        if row.get("dataset_name") == _FOLDER[dataset]:
            out[f"{row['architecture']}_{row['run']}"] = {c: float(row[c]) for c in _METRIC_COLUMNS if c in row}
    return out


def _load_systems(root: Path, dataset: str, include_human: bool = False, **options) -> SystemTable:
    name = f"tanti-{dataset}"
    reject_unknown(name, options)
    images = image_list(root, dataset, name)
    refs_by_image = references_for(root, dataset, name)
    missing = [img for img in images if img not in refs_by_image]
    if missing:
        raise InputError(f"{name}: {len(missing)} images without references, first {missing[0]}")
    systems = {s: _captions(root, dataset, s, len(images), name) for s in _system_ids(include_human)}
    published = _published(root, dataset)
    return SystemTable(
        name=name,
        systems=systems,
        references=[[ws(r) for r in refs_by_image[img]] for img in images],
        image_ids=list(images),
        human=None,
        protocol={
            "dataset": name,
            "images": str(len(images)),
            "systems": str(len(systems)),
            "refs": "flickr8k-token-all5" if dataset == "flickr8k" else "karpathy-test-precomp-all5",
            "text": "ws-normalised",
        },
        extra={"published": {s: published[s] for s in systems if s in published}},
        images=list(images),  # the image lists hold file names (COCO_val2014_…, <id>.jpg)
    )


def load_flickr8k(root: Path, **options) -> SystemTable:
    return _load_systems(root, "flickr8k", **options)


def load_flickr30k(root: Path, **options) -> SystemTable:
    return _load_systems(root, "flickr30k", **options)


def load_coco(root: Path, **options) -> SystemTable:
    return _load_systems(root, "coco", **options)


_SQL_STRING = re.compile(r"'((?:[^'\\]|\\.|'')*)'")
_SQL_COLUMNS = ("image", "cap_human", "cap_init", "cap_pre", "cap_par", "cap_merge", "num_responses")
HE_SYSTEMS = ("human", "init", "pre", "par", "merge")


#: MySQL's string escapes; any other escaped character stands for itself (``\\'`` is ``'``)
_SQL_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "b": "\b", "Z": "\x1a"}


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _SQL_ESCAPES.get(m.group(1), m.group(1)), s.replace("''", "'"), flags=re.S)


def _humaneval_questions(root: Path) -> dict[str, dict[str, str]]:
    rel = f"{HUMANEVAL}/data.sql"
    text = read_text(need(root, rel, "tanti-human200"))
    values = [_unquote(m) for m in _SQL_STRING.findall(text)]
    if len(values) % len(_SQL_COLUMNS):
        raise InputError(f"{rel}: {len(values)} quoted values is not a multiple of {len(_SQL_COLUMNS)} columns")
    out: dict[str, dict[str, str]] = {}
    for i in range(0, len(values), len(_SQL_COLUMNS)):
        row = dict(zip(_SQL_COLUMNS, values[i: i + len(_SQL_COLUMNS)]))
        if not row["image"].endswith(".jpg"):
            raise InputError(f"{rel}: tuple {i // len(_SQL_COLUMNS)} starts with {row['image']!r}, not an image name")
        if row["image"] in out:
            raise InputError(f"{rel}: duplicate image {row['image']}")
        out[row["image"]] = row
    return out


def _humaneval_judgements(root: Path, judgement: str) -> dict[str, dict[str, list[float]]]:
    rel = f"{HUMANEVAL}/humaneval_export.txt"
    lines = read_lines(need(root, rel, "tanti-human200"))
    header = lines[0].split("\t")
    out: dict[str, dict[str, list[float]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for i, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("\t")))
        key = (row.get("user_id"), row.get("image"))
        if key in seen:
            raise InputError(f"{rel} line {i}: user {key[0]} judged image {key[1]} again (first at line {seen[key]})")
        seen[key] = i
        per = out.setdefault(row["image"], {s: [] for s in HE_SYSTEMS})
        for s in HE_SYSTEMS:
            v = row.get(f"{judgement}_{s}")
            if v not in ("0", "1"):
                raise InputError(f"{rel} line {i}: {judgement}_{s} = {v!r}, expected 0 or 1")
            per[s].append(float(v))
    return out


def load_human200(root: Path, judgement: str = "acc", table: str = "caption", **options):
    """Tanti's thesis evaluation: 200 COCO Karpathy-test images x 5 captions (human, init,
    pre, par, merge), each judged by 5 annotators with binary ``acc`` (accuracy) or ``flu``
    (fluency). ``table="caption"``: CorrelationTable of 1,000 rows, human = mean of the 5
    judgements, tau-b (few distinct values). ``table="system"``: SystemTable with the mean
    over all judgements per system. References = the image's 5 aligned references minus any
    matching ``cap_human`` (lower-cased, non-alphanumerics deleted), for every row of the image.
    """
    reject_unknown("tanti-human200", options)
    check_options("tanti-human200", "judgement", judgement, ("acc", "flu"))
    check_options("tanti-human200", "table", table, ("caption", "system"))
    questions = _humaneval_questions(root)
    judged = _humaneval_judgements(root, judgement)
    coco_refs = references_for(root, "coco", "tanti-human200")
    images = [img for img in questions if img in judged]
    unjudged = [img for img in questions if img not in judged]
    stray = [img for img in judged if img not in questions]
    if stray:
        raise InputError(f"tanti-human200: judged image {stray[0]} has no captions in data.sql")
    refs_by_image = {}
    for img in images:
        if img not in coco_refs:
            raise InputError(f"tanti-human200: image {img} not in the Karpathy-test image list")
        drop = loose_key(questions[img]["cap_human"])
        refs_by_image[img] = [ws(r) for r in coco_refs[img] if loose_key(r) != drop]
    protocol = {
        "dataset": "tanti-human200",
        "judgement": f"{judgement}-binary-mean",
        "refs": "karpathy-test-minus-human",
        "text": "ws-normalised",
    }
    if table == "system":
        systems = {s: [ws(questions[img][f"cap_{s}"]) for img in images] for s in HE_SYSTEMS}
        human = {s: float(np.mean([v for img in images for v in judged[img][s]])) for s in HE_SYSTEMS}
        return SystemTable(
            name="tanti-human200", systems=systems, references=[refs_by_image[i] for i in images],
            image_ids=images, human=human, protocol={**protocol, "images": str(len(images))},
            extra={"unjudged_images": unjudged}, images=list(images),
        )
    cands, refs, human, groups, systems = [], [], [], [], []
    for img in images:
        for s in HE_SYSTEMS:
            cands.append(ws(questions[img][f"cap_{s}"]))
            refs.append(refs_by_image[img])
            human.append(float(np.mean(judged[img][s])))
            groups.append(img)
            systems.append(s)
    return CorrelationTable(
        name="tanti-human200", candidates=cands, references=refs, human=np.asarray(human),
        groups=groups, statistic="kendall_tau_b", protocol={**protocol, "rows": str(len(cands))},
        extra={"system": systems, "n_judges": np.array([len(judged[g][s]) for g, s in zip(groups, systems)]),
               "unjudged_images": unjudged},
        images=list(groups),  # each row's group is its COCO file name
    )


def training_pool(root: Path, datasets=("flickr8k", "flickr30k", "coco")):
    """``[(image_id, dataset, human_caps, machine_caps)]`` for every Tanti test image:
    the image's references and its 12 machine captions keyed ``<arch>_<run>``."""
    pool = []
    for ds in datasets:
        if ds not in _FOLDER:
            raise InputError(f"training_pool: unknown dataset {ds!r}; one of {', '.join(_FOLDER)}")
        t = _load_systems(root, ds)
        for i, img in enumerate(t.image_ids):
            pool.append((img, ds, list(t.references[i]), {s: caps[i] for s, caps in t.systems.items()}))
    return pool
