"""Benchmark names → loader functions, imported lazily so ``import capeval.data`` stays cheap."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import InputError


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    kind: str  # "correlation" | "pairwise" | "system"
    folder: str  # folder under the data root whose SHA256SUMS covers the inputs
    loader: str  # "module:function" inside capeval.data
    description: str
    #: further folders the loader reads (e.g. shared reference files)
    needs: tuple[str, ...] = field(default_factory=tuple)
    #: building the table is slow (e.g. parses text), so ``data list`` does not count its rows
    costly: bool = False

    def load_fn(self) -> Callable:
        mod, fn = self.loader.split(":")
        return getattr(importlib.import_module(f"capeval.data.{mod}"), fn)


_SPECS: dict[str, DatasetSpec] = {}


def register_dataset(spec: DatasetSpec) -> DatasetSpec:
    _SPECS[spec.name] = spec
    return spec


def get_spec(name: str) -> DatasetSpec:
    try:
        return _SPECS[name]
    except KeyError:
        raise InputError(
            f"unknown benchmark {name!r}; known: {', '.join(sorted(_SPECS))}"
        ) from None


def specs() -> list[DatasetSpec]:
    return list(_SPECS.values())


_D = register_dataset
_D(DatasetSpec("flickr8k-expert", "correlation", "flickr8k", "flickr8k:load_expert",
               "Flickr8k-Expert, 16,992 rows, 3 experts x 5,664 pairs (CLIPScore protocol, tau-c)"))
_D(DatasetSpec("flickr8k-cf", "correlation", "flickr8k", "flickr8k:load_cf",
               "Flickr8k-CrowdFlower, 47,830 rows, per-image reference removal (tau-b)"))
_D(DatasetSpec("composite", "correlation", "composite", "composite:load_composite",
               "COMPOSITE, 11,985 rows, correctness 1-5, UMIC-decoded text (tau-c)",
               needs=("references_karpathy_test", "machine_captions")))
_D(DatasetSpec("pascal50s", "pairwise", "pascal50s", "pascal50s:load_pascal50s",
               "PASCAL-50S, 4,000 pairs HC/HI/HM/MM (accuracy)"))
_D(DatasetSpec("abstract50s", "pairwise", "abstract50s", "abstract50s:load_abstract50s",
               "ABSTRACT-50S, 400 pairs, 48 consensus votes each (accuracy)"))
for _ds, _n in (("flickr8k", "1,000"), ("flickr30k", "1,000"), ("coco", "5,000")):
    _D(DatasetSpec(f"tanti-{_ds}", "system", "machine_captions", f"tanti:load_{_ds}",
                   f"where-image2 captions, 4 architectures x 3 runs on {_n} {_ds} test images",
                   needs=("flickr8k",) if _ds == "flickr8k" else ("references_karpathy_test",)))
_D(DatasetSpec("tanti-human200", "correlation", "machine_captions", "tanti:load_human200",
               "Tanti PhD human evaluation: 200 COCO images x 5 systems, mean binary accuracy of 5 judges",
               needs=("references_karpathy_test",)))
_D(DatasetSpec("distractors", "pairwise", "flickr8k", "distractors:load_distractors",
               "Hodosh & Hockenmaier (2016)-style forced-choice distractors from Flickr8k/Flickr30k test "
               "captions, 8 tasks (accuracy)", needs=("references_karpathy_test", "machine_captions"), costly=True))
_D(DatasetSpec("foil-sample", "pairwise", "foil_sample_only", "foil:load_foil_sample",
               "FOIL-COCO format samples only (not the benchmark): original vs foil pairs"))
# Evaluation sets of recent metric papers: never a training source by default (capeval.learn.judgments).
_D(DatasetSpec("thumb", "correlation", "thumb", "thumb:load_thumb",
               "THumB 1.0 MSCOCO, 2,000 machine rows (4 systems x 500 images), total score (Pearson; "
               "-D table=system for the system level)"))
_D(DatasetSpec("nebula", "correlation", "nebula", "nebula:load_nebula",
               "Nebula test split (DENEB), EXPERT's JSON, 5/6/10 references per item (tau-c)"))
_D(DatasetSpec("polaris", "correlation", "polaris", "polaris:load_polaris",
               "Polaris (Polos) test CSV, or -D split=exp-val: EXPERT's validation split without references (tau-c)"))
