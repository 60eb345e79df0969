"""Human judgments and training-only sources as units, images and comparisons."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.errors import InputError
from capeval.learn.judgments import load_judgments, overlap_mask
from tests.data.test_distractors import nouns


@pytest.mark.data
def test_distractors_train_is_a_preference_source_on_flickr8k_training_images(data_dir):
    j = load_judgments("distractors-train", data_dir, limit=6, tasks="shuffle,object-list", parser=nouns)
    assert j.kind == "preference" and np.all(j.labels == 0)
    assert len(j.pairs) == 12 and all(img.startswith("flickr:") for img in j.images)
    # a correct caption is its own unit, shared by the tasks built from it
    assert len(j) <= 2 * len(j.pairs)
    expert = load_judgments("flickr8k-expert", data_dir)
    assert not set(j.images) & set(expert.images)  # train images, never Expert's test images
    assert overlap_mask(j, [expert]).sum() <= len(j)


def test_unknown_source_names_the_choices():
    with pytest.raises(InputError, match="distractors-train"):
        load_judgments("no-such-benchmark")
