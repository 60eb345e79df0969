"""pycocoevalcap's own example (pycocoevalcap/example/coco_eval_example.py) run twice on COCO
Karpathy-test captions: as shipped, and with its import line changed to the shim, in a process
with no Java on PATH. Printed lines (modulo pycocotools' timings), ``.eval``, ``.imgToEval`` and
``.evalImgs`` are equal, types included.

SPICE is the agreed exception (the jar needs CoreNLP's models, a download): the original run's
``Spice`` is capeval's SPICE-py too, so that line compares the flow around it, not the numbers.
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._needs import SPICE_PY

from ._corpus import coco_rows
from ._flow import without_timing, write_coco
from ._same import assert_same

pytestmark = [pytest.mark.oracle, pytest.mark.java, pytest.mark.data, pytest.mark.slow]
pe = pytest.importorskip("pycocoevalcap.eval", reason="pycocoevalcap 1.2 (the oracle) not installed")
pytest.importorskip("pycocotools.coco", reason="pycocotools (the example's COCO objects) not installed")

ORIGINAL_IMPORT = "from pycocoevalcap.eval import COCOEvalCap"
SHIM_IMPORT = "from capeval.compat.pycocoevalcap.eval import COCOEvalCap"

RUN = """
import pickle, sys
source = open(sys.argv[1], encoding="utf-8").read()
namespace = {"__name__": "__main__"}
exec(compile(source, sys.argv[1], "exec"), namespace)
ev = namespace["coco_eval"]
with open(sys.argv[2], "wb") as f:
    pickle.dump({"eval": ev.eval, "imgToEval": ev.imgToEval, "evalImgs": ev.evalImgs}, f)
"""


def _example_source() -> str:
    path = Path(pe.__file__).parent / "example" / "coco_eval_example.py"
    if not path.is_file():
        pytest.skip(f"pycocoevalcap's example is not installed ({path})")
    src = path.read_text(encoding="utf-8")
    assert src.count(ORIGINAL_IMPORT) == 1
    return src


@pytest.mark.needs(*SPICE_PY)  # the example flow runs SPICE (SPICE-py on the shim's side)
def test_example_flow_with_only_the_import_changed(data_dir, java, tmp_path, monkeypatch):
    from capeval.compat.pycocoevalcap.spice.spice import Spice as SpicePy

    src = _example_source()
    write_coco(tmp_path, *coco_rows(data_dir, n=100))

    # The shim, in a process that cannot find Java.
    (tmp_path / "example_shim.py").write_text(src.replace(ORIGINAL_IMPORT, SHIM_IMPORT), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CAPEVAL_JAVA", "JAVA_HOME")}
    env["PATH"] = str(Path(sys.executable).parent)
    assert shutil.which("java", path=env["PATH"]) is None
    proc = subprocess.run([sys.executable, "-c", RUN, "example_shim.py", "shim.pkl"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "shim.pkl", "rb") as f:
        ours = pickle.load(f)  # written by the subprocess above

    # The original, as shipped (its jars need Java), with SPICE-py for the jar's SPICE.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pe, "Spice", SpicePy)
    namespace = {"__name__": "__main__"}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(src, "coco_eval_example.py", "exec"), namespace)
    ref = namespace["coco_eval"]

    assert without_timing(proc.stdout.splitlines()) == without_timing(buf.getvalue().splitlines())
    assert "CIDEr: " in proc.stdout and "SPICE: " in proc.stdout
    assert_same(ours["eval"], ref.eval, "eval")
    assert_same(ours["imgToEval"], ref.imgToEval, "imgToEval")
    assert_same(ours["evalImgs"], ref.evalImgs, "evalImgs")
    assert len(ref.imgToEval) == 100


INSTALLED_RUN = """
import pickle, sys
import capeval.compat
capeval.compat.install()
source = open(sys.argv[1], encoding="utf-8").read()
namespace = {"__name__": "__main__"}
exec(compile(source, sys.argv[1], "exec"), namespace)
ev = namespace["coco_eval"]
assert type(ev).__module__ == "capeval.compat.pycocoevalcap.eval", type(ev).__module__
with open(sys.argv[2], "wb") as f:
    pickle.dump({"eval": ev.eval, "imgToEval": ev.imgToEval}, f)
"""


@pytest.mark.needs(*SPICE_PY)
def test_unmodified_example_under_install_equals_the_original(data_dir, java, tmp_path, monkeypatch):
    """The example as shipped, not one character changed, in a fresh interpreter that calls
    ``capeval.compat.install()`` first: every resource lookup (METEOR's jar and paraphrase
    table) must find the real pycocoevalcap, not the shim now answering to its name. All seven
    scores are printed; BLEU, METEOR, ROUGE-L and CIDEr are == the original's on this machine,
    corpus and per image."""
    from capeval.compat.pycocoevalcap.spice.spice import Spice as SpicePy

    src = _example_source()
    write_coco(tmp_path, *coco_rows(data_dir, n=100))
    (tmp_path / "example.py").write_text(src, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CAPEVAL_METEOR_JAR"}
    proc = subprocess.run([sys.executable, "-c", INSTALLED_RUN, "example.py", "installed.pkl"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "installed.pkl", "rb") as f:
        ours = pickle.load(f)  # written by the subprocess above

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pe, "Spice", SpicePy)
    namespace = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(src, "coco_eval_example.py", "exec"), namespace)
    ref = namespace["coco_eval"]

    same = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]
    assert sorted(ours["eval"]) == sorted(ref.eval) == sorted([*same, "SPICE"])
    for name in ("SPICE", *same):
        assert f"{name}: " in proc.stdout
    assert {k: ours["eval"][k] for k in same} == {k: ref.eval[k] for k in same}
    assert sorted(ours["imgToEval"]) == sorted(ref.imgToEval) and len(ref.imgToEval) == 100
    for img, scores in ref.imgToEval.items():
        assert {k: ours["imgToEval"][img][k] for k in same} == {k: scores[k] for k in same}, img
