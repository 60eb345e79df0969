"""One absurd row must not take the machine down (issue 28, item 17): a 1 MB caption is
scored, or refused with a named error, by each text and model family, in a subprocess whose
address space is capped at 2 GiB (``RLIMIT_AS``); none may be killed or end in a raw traceback.

Native METEOR, TER and SPICE-py refuse captions above their caps (capeval.metrics._limits), naming
the item; the others score it."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from capeval.metrics._limits import METEOR_MAX_WORDS, check_lengths
from capeval.errors import InputError

CAP = 2 << 30
SCRIPT = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
    import capeval
    from capeval.errors import CapevalError
    words = "a dog runs on the grass with a red ball near two cats and a big car".split()
    big = " ".join(words[i % len(words)] for i in range(200_000))[:1_000_000]
    try:
        r = capeval.score([big, "two cats sleep"], [["a dog runs on the grass", "a dog"], ["two cats sleep"]],
                          metrics=[sys.argv[1]])
        print(json.dumps({{"scored": float(r.corpus[sys.argv[1]])}}))
    except CapevalError as e:
        print(json.dumps({{"refused": type(e).__name__, "message": str(e)}}))
""")


VECTORS = pytest.mark.needs("extra:semantic", "model:glove-6b-50d")
ENCODER = pytest.mark.needs("extra:bertscore", "model:encoder-minilm-l6")


@pytest.mark.parametrize("metric,outcome", [
    ("bleu4", "scored"), ("bleu4_smooth", "scored"), ("rouge_l", "scored"), ("cider_d", "scored"),
    ("cider", "scored"),
    # native METEOR reads pycocoevalcap's resources; SPICE-py parses with spaCy
    pytest.param("meteor", "refused", marks=pytest.mark.needs("module:pycocoevalcap")), ("ter", "refused"),
    pytest.param("spice", "refused", marks=pytest.mark.needs("extra:semantic")),
    # model families read at most 512 tokens (the encoders truncate); vectors average
    pytest.param("wmd", "scored", marks=VECTORS), pytest.param("wembsim", "scored", marks=VECTORS),
    pytest.param("sentsim_max", "scored", marks=ENCODER), pytest.param("bertscore_f", "scored", marks=ENCODER),
])
def test_a_megabyte_caption_under_a_memory_cap(metric, outcome, tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(cap=CAP), metric], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome in got, got
    if outcome == "refused":
        assert got["refused"] == "InputError" and "candidate of item 0" in got["message"]


def test_caps_count_words_not_characters():
    long_word = "x" * (METEOR_MAX_WORDS * 10)
    check_lengths("METEOR", [long_word], [["a"]], METEOR_MAX_WORDS, "why")  # one word: fine
    with pytest.raises(InputError, match=f"reference 1 of item 1 has {METEOR_MAX_WORDS + 1:,} words"):
        check_lengths("METEOR", ["a", "b"], [["a"], ["b", "w " * (METEOR_MAX_WORDS + 1)]], METEOR_MAX_WORDS, "why")


@pytest.mark.parametrize("text,shown", [(" ".join(["x" * 1001] * 999), "1,000,997 characters"),
                                        ("y" * 1_200_000, "1,200,000 characters")])
@pytest.mark.parametrize("where", ["candidate", "reference"])
def test_spice_caps_characters_too(text, shown, where):
    """Under the word cap, but past spaCy's 1,000,000 characters (its raw [E088]): the named error
    the other families give, before anything is parsed (issue 33, item 10)."""
    from capeval.metrics.spice import Spice

    cands, refs = ([text], [["a dog"]]) if where == "candidate" else (["a dog"], [["a cat", text]])
    what = "candidate of item 0" if where == "candidate" else "reference 1 of item 0"
    for run in (lambda: Spice().compute(cands, refs), lambda: Spice().evaluations(cands, refs)):
        with pytest.raises(InputError, match=f"{what} has {shown}; SPICE-py scores captions of at most 20,000 characters"):
            run()
