"""Which learned-metric numbers on a benchmark would not be held-out results.

A learned metric family (``learned``, ``nneval``) exposes ``provenance(options)``: the model's
``trained_on`` / ``selected_on`` (and ``design_chosen_on``) benchmark names. A benchmark is
*seen* by the model when it is one of them, or when it shares images or candidate texts with a
human-judgment benchmark the model was trained on (Flickr8k-Expert and Flickr8k-CF do), or
when the model learned from a training-only source built by the benchmark's own rules
(``distractors-train`` for ``distractors``).
``capeval bench`` refuses such numbers unless asked (``allow_seen``), and then marks them in the
metric's signature (``seen:...``) and in the tables.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


_ROLES = (("trained_on", "trained"), ("selected_on", "selected"), ("design_chosen_on", "design"))
#: Training-only sources built by a benchmark's own rules on other images: a model trained on
#: one has seen the task, if not its items.
_SAME_RULES = {"distractors-train": "distractors"}


def seen_reasons(benchmark: str, provenance: Mapping[str, Any], *, root: Path | str | None = None) -> list[str]:
    """``["trained=flickr8k-cf", "overlap=flickr8k-cf"]``-style reasons; empty when held out."""
    reasons = [f"{tag}={benchmark}" for key, tag in _ROLES if benchmark in (provenance.get(key) or [])]
    reasons.extend(f"rules={src}" for src in provenance.get("trained_on") or [] if _SAME_RULES.get(src) == benchmark)
    overlaps = _overlapping(benchmark, [b for b in provenance.get("trained_on") or [] if b != benchmark], root)
    reasons.extend(f"overlap={b}" for b in overlaps)
    return reasons


def seen_reasons_of_table(table, provenance: Mapping[str, Any], root: Path | str | None = None) -> list[str]:
    """``overlap=<benchmark>`` for each human-judgment benchmark the model was trained on that
    shares an image or a candidate text with ``table`` (a user's judgment file, which no model
    knows by name: a file exported from a training benchmark is caught by its contents)."""
    from ..learn.judgments import EVALUATION_SETS, JUDGMENT_BENCHMARKS, TRAINING_ONLY, load_judgments, touches

    found = _table_images_and_texts(table)
    others = [b for b in provenance.get("trained_on") or []
              if b in JUDGMENT_BENCHMARKS or b in TRAINING_ONLY or b in EVALUATION_SETS]
    return [f"overlap={b}" for b in others if touches(load_judgments(b, root, allow_eval_sets=True), *found).any()]


def _table_images_and_texts(table) -> tuple[set[str], set[str]]:
    from .. import data
    from ..errors import InputError
    from ..learn.builder import canonical_image
    from ..learn.judgments import norm_text

    if isinstance(table, data.PairwiseTable):
        texts = [*table.candidates_a, *table.candidates_b]
    elif isinstance(table, data.SystemTable):
        texts = [c for caps in table.systems.values() for c in caps]
    else:
        texts = list(table.candidates)
    images = set()
    for name in table.images or ():
        try:
            images.add(canonical_image(name))
        except InputError:  # a user's own image name: no benchmark image has it
            continue
    return images, {norm_text(c) for c in texts}


def _overlapping(benchmark: str, trained: Sequence[str], root) -> list[str]:
    """Training benchmarks that share an image or candidate text with ``benchmark``. Checked
    for the human-judgment benchmarks, the distractor tasks (built from Flickr8k/30k test
    images, which Flickr8k-Expert and CF also use) and the Tanti system tables; other
    benchmarks' images are not known."""
    from ..learn.judgments import EVALUATION_SETS, JUDGMENT_BENCHMARKS, TRAINING_ONLY, load_judgments, touches

    found = _images_and_texts(benchmark, root)
    others = [b for b in trained if b in JUDGMENT_BENCHMARKS or b in TRAINING_ONLY or b in EVALUATION_SETS]
    if found is None or not others:
        return []
    return [b for b in others if touches(load_judgments(b, root, allow_eval_sets=True), *found).any()]


def _images_and_texts(benchmark: str, root) -> tuple[set[str], set[str]] | None:
    from .. import data
    from ..learn.builder import canonical_image
    from ..learn.judgments import EVALUATION_SETS, JUDGMENT_BENCHMARKS, load_judgments, norm_text

    if benchmark in EVALUATION_SETS:
        from ..errors import ResourceNotFound

        # Read only to compare with what a model learned from (training on it is refused
        # elsewhere). Its default split may be absent when another one is run (Polaris's
        # exp-val): then only the by-name rule applies, as for benchmarks of unknown images.
        try:
            held = load_judgments(benchmark, root, allow_eval_sets=True)
        except ResourceNotFound:
            return None
        return set(held.images), {norm_text(c) for c in held.candidates}
    if benchmark in JUDGMENT_BENCHMARKS:
        held = load_judgments(benchmark, root)
        return set(held.images), {norm_text(c) for c in held.candidates}
    if benchmark == "distractors":
        items = data.load(benchmark, root).extra["items"]
        return ({canonical_image(it.image) for it in items},
                {norm_text(t) for it in items for t in (it.correct, it.distractor)})
    if data.get_spec(benchmark).kind == "system":
        # The Tanti system tables caption the COCO/Flickr test images that Tanti-200's human
        # evaluation (a training benchmark of the learned models) was drawn from.
        table = data.load(benchmark, root)
        return ({canonical_image(i) for i in table.image_ids},
                {norm_text(c) for caps in table.systems.values() for c in caps})
    return None
