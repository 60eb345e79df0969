"""Synthetic benchmark tables served through ``capeval.data.load`` so the bench layer can be
tested without the shared data (the real-data tests live in test_reproduction.py)."""
import numpy as np
import pytest

import capeval.data
from capeval.data.records import CorrelationTable, PairwiseTable, SystemTable

WORDS = "a the dog cat man woman red blue runs sits on in grass street ball bike park water".split()


def _sentences(rng, n, length=6):
    return [" ".join(rng.choice(WORDS, size=length)) for _ in range(n)]


def make_tables():
    rng = np.random.default_rng(0)
    n = 60
    refs = [_sentences(rng, 3) for _ in range(n)]
    # candidate i copies k of its reference's words; the "human" rating follows k noisily
    k = rng.integers(0, 7, n)
    cands = [" ".join(refs[i][0].split()[: k[i]] + list(rng.choice(WORDS, 6 - k[i]))) or "x" for i in range(n)]
    human = np.clip(np.round(k / 2 + rng.normal(0, 0.7, n)), 1, 4)
    corr = CorrelationTable("toy-corr", cands, refs, human, [str(i // 3) for i in range(n)], "kendall_tau_c",
                            {"dataset": "toy-corr", "rows": str(n), "refs": "synthetic"})
    m = 40
    prefs = [_sentences(rng, 3) for _ in range(m)]
    good = [r[0] for r in prefs]
    bad = _sentences(rng, m)
    swap = rng.random(m) < 0.5
    a = [bad[i] if swap[i] else good[i] for i in range(m)]
    b = [good[i] if swap[i] else bad[i] for i in range(m)]
    b[0] = a[0]  # one exact metric tie
    pairs = PairwiseTable("toy-pairs", a, b, [r[1:] for r in prefs], swap.astype(float),
                          ["HC", "HI", "HM", "MM"] * (m // 4), {"dataset": "toy-pairs", "rows": str(m)})
    imgs = [f"img{i}" for i in range(20)]
    srefs = [_sentences(rng, 3) for _ in imgs]
    systems = {}
    for s in range(4):
        systems[f"sys{s}"] = [" ".join(r[0].split()[: s + 2] + ["dog"] * (4 - s)) for r in srefs]
    sys_t = SystemTable("toy-sys", systems, srefs, imgs, {f"sys{s}": float(s) for s in range(4)},
                        {"dataset": "toy-sys", "images": "20"})
    return {"toy-corr": corr, "toy-pairs": pairs, "toy-sys": sys_t}


@pytest.fixture
def toy_data(monkeypatch):
    tables = make_tables()
    real = capeval.data.load

    def load(name, root=None, **options):
        return tables[name] if name in tables else real(name, root, **options)

    monkeypatch.setattr(capeval.data, "load", load)
    # `capeval bench` checks every benchmark name before it scores anything
    real_spec = capeval.data.registry.get_spec
    monkeypatch.setattr(capeval.data.registry, "get_spec", lambda name: None if name in tables else real_spec(name))
    return tables
