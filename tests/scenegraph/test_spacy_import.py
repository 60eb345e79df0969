"""spaCy's import leaves a user's process as spaCy's own import would; only in the ``capeval``
command's process (which owns its interpreter) is the default pipeline loaded without thinc
importing PyTorch (seconds of a fresh process), and torch still imports normally afterwards."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.needs("extra:semantic", "model:spacy-sm")

# What `capeval.cli.main.main` sets before running a command.
OWN = "import capeval._process\ncapeval._process.owns_interpreter = True\n"


def _run(code: str, env: dict | None = None) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.split("\n")


SCRIPT = """
import sys
from capeval.scenegraph.parser import load_spacy
nlp = load_spacy()
print("torch" in sys.modules, sys.modules.get("torch", 0) is None, [t.lemma_ for t in nlp("dogs ran")])
try:
    import torch
except ImportError:
    print("no torch")
else:
    print(hasattr(torch, "tensor"))
"""


def test_in_the_cli_process_the_default_pipeline_loads_without_torch_and_torch_imports_after():
    out = _run(OWN + SCRIPT)
    assert out[0] == "False False ['dog', 'run']"
    assert out[1] in ("True", "no torch")


def test_the_cli_entry_point_owns_its_interpreter():
    # main() ends the process itself (after atexit handlers run), so the check is one of them
    code = ("import atexit, sys, capeval._process\nfrom capeval.cli.main import main\n"
            "before = capeval._process.owns_interpreter\n"
            "atexit.register(lambda: print(before, capeval._process.owns_interpreter, flush=True))\n"
            "sys.argv = ['capeval', '--help']\nmain()")
    assert _run(code)[-2] == "False True"


LIBRARY = """
import json, sys
import capeval
r = capeval.score(["a black dog runs on the grass"], [["a dog running on grass", "a black dog"]], ["spice"])
assert 0 < r.corpus["spice"] <= 1, r.corpus
assert "spacy" in sys.modules  # parsed here, not read from a parse store
import thinc.util, spacy, spacy.cli
try:
    import torch
    torch_ok = torch.tensor([1.0]).sum().item() == 1.0
except ImportError:
    torch_ok = None
print(json.dumps({"has_torch": thinc.util.has_torch, "torch": torch_ok,
                  "cli": [spacy.cli.__file__ is not None, callable(getattr(spacy.cli, "download", None)),
                          spacy.cli.info.__module__]}))
"""


@pytest.mark.needs("model:wordnet")
def test_spice_through_the_library_leaves_thinc_torch_and_spacy_cli_as_they_are(tmp_path):
    """A user's process scoring SPICE-py: thinc sees torch as a process importing thinc alone
    does, torch imports, and spacy.cli is spaCy's real package."""
    from capeval.resources.wordnet import wordnet_dir

    # An empty cache, so that no stored parse spares SPICE-py loading spaCy (WordNet named).
    env = {**os.environ, "CAPEVAL_CACHE": str(tmp_path), "CAPEVAL_WORDNET_DIR": str(wordnet_dir())}
    alone = json.loads(_run("import json, thinc.util; print(json.dumps(thinc.util.has_torch))")[0])
    got = json.loads(_run(LIBRARY, env)[-2])
    torch_installed = subprocess.run([sys.executable, "-c", "import torch"], check=False, capture_output=True).returncode == 0
    assert got["has_torch"] == alone == torch_installed
    assert got["torch"] is (True if torch_installed else None)
    assert got["cli"] == [True, True, "spacy.cli.info"]


def test_torch_free_import_leaves_an_earlier_thinc_alone(monkeypatch):
    from capeval import _process
    from capeval.scenegraph import parser

    monkeypatch.setattr(_process, "owns_interpreter", True)
    import spacy  # noqa: F401  # thinc already imported: nothing is blocked

    assert parser._import_spacy(torch_free=True) is sys.modules["spacy"]
    assert sys.modules.get("torch", 0) is not None


THREADED = """
import sys, threading
from capeval.scenegraph.parser import load_spacy
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
load_spacy()
print("thinc.compat" in sys.modules and sys.modules["thinc.compat"].has_torch)
stop.set()
"""


@pytest.mark.needs("module:torch")
def test_nothing_is_blocked_while_another_thread_runs():
    """With another thread alive, torch is not hidden (that thread might import it meanwhile)."""
    assert _run(OWN + THREADED)[0] == "True"


CLI = """
import sys
from capeval.scenegraph.parser import load_spacy
load_spacy()
import spacy
print("spacy.cli" in sys.modules, hasattr(spacy, "cli"))
print(spacy.info(silent=True)["spacy_version"] == spacy.__version__)
import spacy.cli
print(callable(spacy.cli.download), spacy.cli.info.__module__)
"""


def test_in_the_cli_process_spacy_cli_is_imported_only_when_used():
    assert _run(OWN + CLI)[:3] == ["False False", "True", "True spacy.cli.info"]
