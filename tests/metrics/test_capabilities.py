"""Capabilities are attributes of the metric families, and the registry derives every list of
family names from them (``families_with``)."""
import pytest

from capeval.errors import InputError
from capeval.metrics.base import Metric
from capeval.metrics.registry import OUTPUT_MODULES, families_with, family_for, get_family
from capeval.stream import streamable
from capeval.stream.run import _plan, _settings


def _built_in(families):
    """Without the plug-ins and user metrics another test may have registered."""
    built_in = {family_for(o).family for o in OUTPUT_MODULES}
    return [f for f in families if f in built_in]


def test_capabilities_default_to_false_and_are_declared_on_the_families():
    for cap in ("uses_df", "is_learned", "needs_images"):
        assert getattr(Metric, cap) is False
    assert Metric.needs_references is True
    # every family streams through its statistics, but those whose rows depend on the whole
    # input with no pre-pass for it (options or a model may decide it: cannot_stream)
    assert Metric.streamable is True
    never = {get_family(f).family for f in _built_in(get_family(f).family for f in ("qace_img", "pairjudge"))}
    assert set(_built_in(families_with("streamable"))) == {family_for(o).family for o in OUTPUT_MODULES} - never
    assert _built_in(families_with("uses_df")) == ["cider", "cider_d", "spider"]
    assert _built_in(families_with("is_learned")) == ["learned", "nneval", "polos"]
    assert get_family("learned").provenance({}) is not None  # learned families say what they saw


def test_unknown_capability_is_an_error():
    with pytest.raises(ValueError, match="not a capability"):
        families_with("fast")


def test_streaming_reads_the_capabilities(tmp_path):
    assert streamable(["bleu4", "rouge_l", "cider_d", "cider", "meteor", "ter", "spice"])
    assert streamable(["bleu4", "nneval"]) and streamable(["spider"])
    # a model decides it: one with a BERTScore feature under bert_score's padding floor does not
    from tests.learn._floor_model import REFUSAL, floor_model

    floor = {"learned": {"model": floor_model(tmp_path / "floor.npz")}}
    assert not streamable(["bleu4", "learned"], floor) and streamable(["learned"], {"learned": {"model": "mpnet"}})
    assert streamable(["bleu4", "learned"])  # the shipped models' BERTScore features have no floor
    # an option decides it: BERTScore's batch padding floor (its default) depends on the rows
    # around; its idf, from the whole input's references, is a pre-pass
    assert not streamable(["bertscore_f"], {"bertscore": {"idf": True}})
    assert streamable(["bertscore_f"], {"bertscore": {"idf": True, "padding_floor": False}})
    with pytest.raises(InputError, match=r"learned cannot be streamed: learned: " + REFUSAL):
        _settings(_plan(["bleu4", "learned"], None, "ptb", floor), False, "space", None)
    _, needs_df, _ = _settings(_plan(["bleu4", "rouge_l"], None, "ptb", None), False, "space", None)
    assert needs_df is False
    _, needs_df, _ = _settings(_plan(["bleu4", "cider"], None, "ptb", None), False, "space", None)
    assert needs_df is True


def test_learned_and_reusing_are_derived_from_the_hooks_a_family_writes():
    from capeval.metrics.base import OutputInfo

    class Plain(Metric):
        family, variant = "plain_cap", "plain_cap"
        outputs = (OutputInfo("plain_cap", "plain_cap", "plain_cap", (0.0, 1.0)),)

    class Judged(Plain):
        @classmethod
        def provenance(cls, options):
            return {"model": "m", "trained_on": ["x"]}

    class Reusing(Plain):
        def reuse(self, shared, *, tokenizer):
            self.shared = shared

    assert (Plain.is_learned, Plain.reuses_scores) == (False, False)
    assert (Judged.is_learned, Judged.reuses_scores) == (True, False)
    assert (Reusing.is_learned, Reusing.reuses_scores) == (False, True)
    assert get_family("learned").reuses_scores and get_family("learned").is_learned
    assert get_family("polos").is_learned and not get_family("polos").reuses_scores

    with pytest.raises(TypeError, match="is_learned is derived from whether the family writes provenance"):
        class Claims(Plain):
            is_learned = True

    class Agrees(Judged):  # a declaration that agrees with the hooks is accepted
        is_learned = True

    assert Agrees.is_learned
