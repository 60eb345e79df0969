"""The default pipeline loads without thinc importing PyTorch (seconds of a fresh process), and
torch still imports normally afterwards."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("spacy")

SCRIPT = """
import sys
from capeval.errors import ResourceNotFound
from capeval.scenegraph.parser import load_spacy
try:
    nlp = load_spacy()
except ResourceNotFound:
    print("skip"); raise SystemExit(0)
print("torch" in sys.modules, sys.modules.get("torch", 0) is None, [t.lemma_ for t in nlp("dogs ran")])
try:
    import torch
except ImportError:
    print("no torch")
else:
    print(hasattr(torch, "tensor"))
"""


def test_default_pipeline_loads_without_torch_and_torch_imports_after():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.split("\n")
    if out[0] == "skip":
        pytest.skip("the default spaCy pipeline is not installed")
    assert out[0] == "False False ['dog', 'run']"
    assert out[1] in ("True", "no torch")


def test_torch_free_import_leaves_an_earlier_thinc_alone(monkeypatch):
    from capeval.scenegraph import parser

    import spacy  # noqa: F401  # thinc already imported: nothing is blocked

    assert parser._import_spacy(torch_free=True) is sys.modules["spacy"]
    assert sys.modules.get("torch", 0) is not None


THREADED = """
import sys, threading
from capeval.errors import ResourceNotFound
from capeval.scenegraph.parser import load_spacy
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
try:
    load_spacy()
except ResourceNotFound:
    print("skip")
else:
    print("thinc.compat" in sys.modules and sys.modules["thinc.compat"].has_torch)
stop.set()
"""


def test_nothing_is_blocked_while_another_thread_runs():
    """With another thread alive, torch is not hidden (that thread might import it meanwhile)."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-c", THREADED], capture_output=True, text=True, check=True).stdout.strip()
    if out == "skip":
        pytest.skip("the default spaCy pipeline is not installed")
    assert out == "True"


CLI = """
import sys
from capeval.errors import ResourceNotFound
from capeval.scenegraph.parser import load_spacy
try:
    load_spacy()
except ResourceNotFound:
    print("skip"); raise SystemExit(0)
import spacy
print("spacy.cli" in sys.modules, hasattr(spacy, "cli"))
print(spacy.info(silent=True)["spacy_version"] == spacy.__version__)
import spacy.cli
print(callable(spacy.cli.download), spacy.cli.info.__module__)
"""


def test_spacy_cli_is_imported_only_when_used():
    out = subprocess.run([sys.executable, "-c", CLI], capture_output=True, text=True, check=True).stdout.split("\n")
    if out[0] == "skip":
        pytest.skip("the default spaCy pipeline is not installed")
    assert out[:3] == ["False False", "True", "True spacy.cli.info"]
