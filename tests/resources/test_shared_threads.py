"""Shared resources (WordNet reader, encoder tokenizers) are never entered by two threads at
once: both keep per-call state in the shared object."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from capeval.resources import encoders, wordnet


class _Detector:
    """Records whether two threads were ever inside it at the same time."""

    def __init__(self):
        self.inside = 0
        self.overlap = False
        self.guard = threading.Lock()

    def enter(self):
        with self.guard:
            self.inside += 1
            if self.inside > 1:
                self.overlap = True
        time.sleep(0.001)  # give other threads the chance to enter
        with self.guard:
            self.inside -= 1


def _hammer(fn, n=64):
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda _: fn(), range(n)))
    finally:
        sys.setswitchinterval(old)


def test_wordnet_reader_calls_are_serialised():
    det = _Detector()

    class FakeReader:
        version = "3.0"

        def synsets(self, word):
            det.enter()
            return [word]

    reader = wordnet._Serialised(FakeReader())
    _hammer(lambda: reader.synsets("dog"))
    assert not det.overlap
    assert reader.synsets("cat") == ["cat"] and reader.version == "3.0"


def test_shared_tokenizer_is_called_by_one_thread_at_a_time():
    from capeval.metrics._bertscore_core import encode_sentences

    det = _Detector()

    class FakeTokenizer:
        model_max_length = 512

        def __call__(self, texts, **kw):
            det.enter()
            return {"input_ids": [[101, len(t), 102] for t in texts]}

    tok = FakeTokenizer()
    assert encoders.tokenizer_lock(tok) is encoders.tokenizer_lock(tok)
    _hammer(lambda: encode_sentences(tok, ["a dog", "a cat runs"]))
    assert not det.overlap
