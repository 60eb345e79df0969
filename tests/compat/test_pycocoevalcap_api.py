"""The shim's surface without Java or data: return formats (SPICE's jar format and key order),
the one-time notices, errors naming the image, Bleu's orders and printing, ``install()``."""
from __future__ import annotations

import contextlib
import io
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

from capeval.compat import CompatNotice
from capeval.compat._notices import _forget
from capeval.compat.pycocoevalcap.bleu.bleu import Bleu
from capeval.compat.pycocoevalcap.cider.cider import Cider
from capeval.compat.pycocoevalcap.rouge.rouge import Rouge
from capeval.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
from tests._needs import SPICE_PY, requires
from capeval.errors import InputError

from ._same import assert_same

GTS = {3: ["a dog runs on the grass", "the dog is running outside"],
       1: ["two red cats sleep on a sofa", "cats asleep on a couch"],
       2: ["a man rides a bike", "a person on a bicycle in the street"]}
RES = {3: ["a dog running on grass"], 1: ["two cats on a red sofa"], 2: ["a man riding a red bike"]}


@pytest.fixture(autouse=True)
def fresh_notices():
    _forget()
    yield
    _forget()


def _printed(fn, *args, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    return out, buf.getvalue()


@pytest.mark.oracle
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("verbose", [0, 1, 2])
def test_bleu_orders_and_printing_equal_pycocoevalcap(n, verbose):
    ref_bleu = pytest.importorskip("pycocoevalcap.bleu.bleu")
    ours, our_print = _printed(Bleu(n).compute_score, GTS, RES, verbose=verbose)
    ref, ref_print = _printed(ref_bleu.Bleu(n).compute_score, GTS, RES, verbose=verbose)
    assert_same(ours, ref)
    assert our_print == ref_print
    assert (our_print != "") == (verbose > 0)


@pytest.mark.oracle
def test_one_image_cider_is_zero_as_in_pycocoevalcap():
    ref_cider = pytest.importorskip("pycocoevalcap.cider.cider")
    one_g, one_r = {7: GTS[3]}, {7: RES[3]}
    assert_same(Cider().compute_score(one_g, one_r), ref_cider.Cider().compute_score(one_g, one_r))
    assert Cider().compute_score(one_g, one_r)[0] == 0.0


@pytest.mark.oracle
def test_rouge_calc_score_and_lcs():
    ref_rouge = pytest.importorskip("pycocoevalcap.rouge.rouge")
    from capeval.compat.pycocoevalcap.rouge.rouge import my_lcs

    assert Rouge().calc_score(RES[3], GTS[3]) == ref_rouge.Rouge().calc_score(RES[3], GTS[3])
    a, b = "a b c a b".split(), "b a c b".split()
    assert my_lcs(a, b) == ref_rouge.my_lcs(a, b)


def test_refusals_name_the_image():
    with pytest.raises(InputError, match="image 2 has references but no result"):
        Rouge().compute_score(GTS, {3: RES[3], 1: RES[1]})
    with pytest.raises(InputError, match=r"res\[1\] must be a list holding exactly one caption"):
        Bleu().compute_score(GTS, {**RES, 1: ["one", "two"]}, verbose=0)
    with pytest.raises(InputError, match=r"gts\[2\] must be a non-empty list"):
        Cider().compute_score({**GTS, 2: []}, RES)
    with pytest.raises(InputError, match="of image 3 is not a string"):
        Rouge().compute_score(GTS, {**RES, 3: [None]})
    with pytest.raises(InputError, match="annotation 0 of image 5 has no 'caption'"):
        PTBTokenizer().tokenize({5: [{"text": "a dog"}]})
    with pytest.raises(InputError, match="orders 1 to 4"):
        Bleu(5)
    with pytest.raises(InputError, match="n must be 4"):
        Cider(n=3)


def test_tokenizer_drops_images_without_captions_and_keeps_order():
    out = PTBTokenizer().tokenize({"b": [{"caption": "A Dog."}], "a": [], "c": [{"caption": "Two cats, sleeping!"},
                                                                                 {"caption": "..."}]})
    assert out == {"b": ["a dog"], "c": ["two cats sleeping", ""]}
    assert list(out) == ["b", "c"]


def test_line_breaks_read_as_spaces_with_one_notice():
    gts = {1: ["a man\u2028rides a horse", "a dog"], 2: ["two\ncats", "cats"]}
    spaced = {k: [r.replace("\u2028", " ").replace("\n", " ") for r in v] for k, v in gts.items()}
    res = {1: ["a man rides"], 2: ["two cats"]}
    with pytest.warns(CompatNotice, match="line break"):
        got = Rouge().compute_score(gts, res)
    assert_same(got, Rouge().compute_score(spaced, res))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompatNotice)
        Rouge().compute_score(gts, res)  # once per process: no second notice
        # The tokenizer replaces "\n" itself, as pycocoevalcap does: nothing to announce.
        assert PTBTokenizer().tokenize({1: [{"caption": "A man\nrides."}]}) == {1: ["a man rides"]}
    with pytest.warns(CompatNotice, match="PTBTokenizer"):
        assert PTBTokenizer().tokenize({1: [{"caption": "A man\rrides."}]}) == {1: ["a man rides"]}


def _java_hashmap_order(keys):
    """Iteration order of a java.util.HashMap (16 buckets) holding ``keys``: String.hashCode,
    spread by h ^ (h >>> 16), bucket h & 15, insertion order within a bucket."""
    def h(s):
        v = 0
        for ch in s:
            v = (31 * v + ord(ch)) & 0xFFFFFFFF
        return v ^ (v >> 16)

    buckets: dict[int, list] = {}
    for k in keys:
        buckets.setdefault(h(k) & 15, []).append(k)
    return [k for b in sorted(buckets) for k in buckets[b]]


def test_spice_key_order_is_the_jars_json_order():
    from capeval.compat.pycocoevalcap.spice.spice import CATEGORIES, FIELDS

    # SpiceStats puts "All", then its filters, into HashMaps; Evaluation.toJSONString puts
    # tp, fp, fn, f, pr, re, numImages into a JSONObject (a HashMap); json.load keeps that order.
    filters = _java_hashmap_order(["Object", "Attribute", "Relation", "Cardinality", "Color", "Size"])
    assert [name for name, _ in CATEGORIES] == _java_hashmap_order(["All", *filters])
    assert list(FIELDS) == _java_hashmap_order(["tp", "fp", "fn", "f", "pr", "re", "numImages"])


@pytest.fixture(scope="module")
@requires(*SPICE_PY)
def spice_py():
    from capeval.metrics.spice import Spice as Family

    Family().compute(["a dog"], [["a dog"]])


def test_spice_returns_the_jars_format(spice_py):
    import capeval
    from capeval.compat.pycocoevalcap.spice.spice import CATEGORIES, FIELDS, Spice

    gts = {**GTS, 4: ["a tree"]}
    res = {**RES, 4: ["two big red trees"]}
    with pytest.warns(CompatNotice, match="SPICE-py"):
        mean, scores = Spice().compute_score(gts, res)
    ids = sorted(gts)
    assert type(mean) is np.float64 and isinstance(scores, list) and len(scores) == len(ids)
    for s in scores:
        assert list(s) == [name for name, _ in CATEGORIES]
        for cat in s.values():
            assert list(cat) == list(FIELDS) and all(type(v) is float for v in cat.values())
            assert cat["numImages"] == 1.0
    # F-scores are capeval's SPICE-py, in sorted id order; tp + fp and tp + fn are the tuple counts.
    expected = capeval.score([res[i][0] for i in ids], [gts[i] for i in ids], ["spice", "spice_color"],
                             tokenizer="none")
    assert [s["All"]["f"] for s in scores] == expected.per_caption["spice"].tolist()
    assert mean == np.mean(expected.per_caption["spice"])
    color = [s["Color"]["f"] for s in scores]
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(color, expected.per_caption["spice_color"]))
    assert math.isnan(scores[ids.index(4)]["Color"]["pr"])  # the references name no colour: NaN, as the jar
    for s in scores:
        a = s["All"]
        assert a["tp"] + a["fp"] > 0 and (a["tp"] == 0 or a["pr"] == a["tp"] / (a["tp"] + a["fp"]))


def test_install_routes_imports_to_the_shim():
    code = """
import warnings, pycocoevalcap.bleu.bleu as real
import capeval.compat as compat
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    compat.install()
assert any("imported before" in str(x.message) for x in w)
from pycocoevalcap.eval import COCOEvalCap
from pycocoevalcap.bleu.bleu import Bleu
import pycocoevalcap.tokenizer.ptbtokenizer as tok
assert COCOEvalCap.__module__ == "capeval.compat.pycocoevalcap.eval", COCOEvalCap.__module__
assert Bleu.__module__ == "capeval.compat.pycocoevalcap.bleu.bleu" and Bleu is not real.Bleu
import capeval.compat.pycocoevalcap.tokenizer.ptbtokenizer as shim_tok
assert tok is shim_tok
import importlib, importlib.util
assert importlib.util.find_spec("pycocoevalcap.bleu.bleu_scorer") is None  # not found, not an exception
assert importlib.util.find_spec("pycocoevalcap.x") is None
try:
    import pycocoevalcap.bleu.bleu_scorer
except ModuleNotFoundError as e:
    assert e.name == "pycocoevalcap.bleu.bleu_scorer", e
else:
    raise AssertionError("a module the shim lacks imported")
import pycocoevalcap, pycocoevalcap.bleu
importlib.reload(pycocoevalcap)
importlib.reload(pycocoevalcap.bleu)
assert pycocoevalcap.__name__ == "capeval.compat.pycocoevalcap", pycocoevalcap.__name__
compat.uninstall()
import pycocoevalcap
assert not pycocoevalcap.__name__.startswith("capeval"), pycocoevalcap.__name__
assert importlib.util.find_spec("pycocoevalcap.x") is None
import pycocoevalcap.bleu.bleu as again
assert again.Bleu.__module__ == "pycocoevalcap.bleu.bleu", again.Bleu.__module__
print("ok")
"""
    pytest.importorskip("pycocoevalcap.bleu.bleu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_coco_eval_warns_once_when_spice_pairs_another_images_score(monkeypatch):
    """The original pairs SPICE's sorted-id scores with unsorted images; the shim keeps that and says so."""
    import capeval.compat.pycocoevalcap.eval as ev

    class FakeCoco:
        def __init__(self, anns):
            self.imgToAnns = anns

        def getImgIds(self):
            return list(self.imgToAnns)

    class SortedSpice:
        def compute_score(self, gts, res):
            ids = sorted(gts)
            return np.float64(0.5), [{"All": {"f": float(i)}} for i in ids]

        def method(self):
            return "SPICE"

    monkeypatch.setattr(ev, "Spice", SortedSpice)
    # SPICE is the stand-in above: what evaluate() checks first is only METEOR's (SPICE-py's
    # WordNet may be absent here).
    require = ev.require
    monkeypatch.setattr(ev, "require", lambda scorers, what: require(tuple(s for s in scorers if s != "SPICE"), what))
    gts = {k: [{"caption": c} for c in v] for k, v in GTS.items()}  # ids 3, 1, 2: unsorted
    res = {k: [{"caption": v[0]}] for k, v in RES.items()}
    e = ev.COCOEvalCap(FakeCoco(gts), FakeCoco(res))
    with pytest.warns(UserWarning, match="holds another image's score"), contextlib.redirect_stdout(io.StringIO()):
        e.evaluate()
    assert [e.imgToEval[k]["SPICE"]["All"]["f"] for k in (3, 1, 2)] == [1.0, 2.0, 3.0]
