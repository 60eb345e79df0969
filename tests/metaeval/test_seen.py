"""capeval bench refuses learned-metric numbers on data the model saw, or marks them when asked."""
from __future__ import annotations

import pytest

from capeval.service.cache import ScoreCache
from capeval.metaeval.runner import run_benchmark
from capeval.metaeval.seen import seen_reasons
from capeval.metaeval.tables import build_table, to_json_dict
from capeval.errors import InputError
from capeval.learn.ranker_model import RankerModel
from tests.learn.test_learned_metric import FEATS, model_path  # noqa: F401  (fixture)

pytestmark = pytest.mark.data


def test_reasons_name_the_role_and_image_overlap(data_dir):
    assert seen_reasons("composite", {"trained_on": ["pascal50s"], "selected_on": ["composite"]},
                        root=data_dir) == ["selected=composite"]
    # Expert and CF rate captions of the same Flickr8k test images
    assert seen_reasons("flickr8k-expert", {"trained_on": ["flickr8k-cf"]}, root=data_dir) == ["overlap=flickr8k-cf"]
    assert seen_reasons("flickr8k-expert", {"trained_on": ["abstract50s", "tanti-coco"]}, root=data_dir) == []


def test_learned_model_on_a_benchmark_it_saw_is_refused_unless_allowed(data_dir, model_path, tmp_path):  # noqa: F811
    m = RankerModel.load(model_path)
    m.meta["trained_on"] = ["flickr8k-cf"]
    path = tmp_path / "cf.npz"
    m.save(path)
    opts = {"learned": {"model": str(path)}}
    cache = ScoreCache(tmp_path / "cache")
    with pytest.raises(InputError, match=r"overlap=flickr8k-cf.*--allow-seen"):
        run_benchmark("flickr8k-expert", ["learned"], root=data_dir, options=opts, cache=cache)
    res = run_benchmark("flickr8k-expert", ["learned", "bleu1"], root=data_dir, options=opts, cache=cache,
                        allow_seen=True)
    assert res.metric_signatures["learned"].endswith("|seen:overlap=flickr8k-cf")
    assert "seen" not in res.metric_signatures["bleu1"]
    rows = {r[0]: r for r in build_table(res).rows}
    assert "learned (seen: overlap=flickr8k-cf)" in rows and "bleu1" in rows
    assert to_json_dict(res)["_meta"]["seen"] == {"learned": ["overlap=flickr8k-cf"]}


def test_shipped_nneval_is_refused_where_it_was_selected(data_dir):
    with pytest.raises(InputError, match="selected=flickr8k-expert"):
        run_benchmark("flickr8k-expert", ["nneval"], root=data_dir)



def test_distractor_tasks_overlap_the_flickr8k_judgment_sets(data_dir):
    # The distractor items are built from Flickr8k/30k test images, which Expert and CF rate.
    reasons = seen_reasons("distractors", {"trained_on": ["flickr8k-expert", "abstract50s"]}, root=data_dir)
    assert reasons == ["overlap=flickr8k-expert"]
    assert seen_reasons("distractors", {"trained_on": ["abstract50s"]}, root=data_dir) == []


def test_tanti_system_tables_overlap_the_human_evaluation_images(data_dir):
    # Tanti-200's human evaluation rated captions of 200 of the COCO test images the system table covers.
    assert seen_reasons("tanti-coco", {"trained_on": ["tanti-human200"]}, root=data_dir) == ["overlap=tanti-human200"]
    assert seen_reasons("tanti-coco", {"trained_on": ["abstract50s"]}, root=data_dir) == []


def test_a_model_trained_on_distractor_tasks_has_seen_the_distractor_tasks(data_dir):
    # distractors-train uses Flickr8k training images, but the same rules as the benchmark
    reasons = seen_reasons("distractors", {"trained_on": ["distractors-train"]}, root=data_dir)
    assert reasons[0] == "rules=distractors-train"
    assert "rules=distractors-train" not in seen_reasons("pascal50s", {"trained_on": ["distractors-train"]},
                                                         root=data_dir)
