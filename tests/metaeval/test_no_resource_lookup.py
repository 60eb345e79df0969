"""A benchmark run of the n-gram metrics looks up no external resource: no jar, encoder, vector
set or WordNet is resolved, not even to key the score cache (only the requested families'
resources are part of their keys, and CIDEr-D and BLEU read none)."""
import pytest

import capeval.resources
import capeval.resources.resolver as resolver
from capeval.metaeval.runner import run_benchmark
from capeval.metaeval.tables import to_json_dict
from capeval.service.cache import ScoreCache


@pytest.fixture
def no_resources(monkeypatch):
    looked_up = []

    def refuse(*args, **kwargs):
        looked_up.append(args)
        raise AssertionError(f"a resource was looked up: {args!r}")

    for name in ("resolve", "get_spec", "list_resources", "java_executable"):
        monkeypatch.setattr(resolver, name, refuse)
    monkeypatch.setattr(capeval.resources, "resolve", refuse)
    monkeypatch.setattr(capeval.resources, "list_resources", refuse)
    return looked_up


@pytest.mark.parametrize("metrics", [["cider_d"], ["bleu4", "rouge_l", "cider_d"]])
def test_ngram_bench_resolves_no_resource(toy_data, tmp_path, no_resources, metrics):
    cache = ScoreCache(tmp_path)
    first = run_benchmark("toy-corr", metrics, cache=cache, tokenizer="ptb")
    again = run_benchmark("toy-corr", metrics, cache=cache, tokenizer="ptb")  # read back from the cache
    assert no_resources == []
    assert not any(first.cached.values()) and all(again.cached.values())
    a, b = to_json_dict(first), to_json_dict(again)
    assert {k: v for k, v in a.items() if k != "_meta"} == {k: v for k, v in b.items() if k != "_meta"}


def test_the_guard_catches_a_lookup(no_resources):
    # The fixture must be able to fail: a family reading the METEOR jar does look it up.
    from capeval.service.cache import resource_state

    with pytest.raises(AssertionError, match="resource was looked up"):
        resource_state(["meteor-jar"])
