"""`import capeval` stays light: heavy optional dependencies load only inside the functions
that need them. Each check runs in a fresh interpreter, since this test process has loaded
most of them already."""
import subprocess
import sys

import pytest

# The issue-26 list plus the other optional dependencies a metric family may need.
HEAVY = ("torch", "spacy", "typer", "rich", "pyarrow", "ray", "transformers", "matplotlib", "PIL",
         "open_clip", "nltk", "scipy", "sklearn", "pandas", "numba", "sentence_transformers", "gensim",
         "jinja2", "click")


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list


@pytest.mark.parametrize("code", [
    "import capeval",
    "import capeval; capeval.list_metrics(); capeval.CiderDReward",
    # Every module that defines a metric, the scoring service and the stream package: importing
    # them (e.g. to list metrics or resolve a family) must not load their models' libraries.
    ("import importlib, capeval\n"
     "from capeval.metrics.registry import OUTPUT_MODULES\n"
     "for m in sorted(set(OUTPUT_MODULES.values())): importlib.import_module(m)\n"
     "import capeval.service.scoring, capeval.stream.run, capeval.data, capeval.inputs"),
    # SPICE-py's parser module imports spaCy only when a pipeline is loaded.
    "import capeval.scenegraph.parser, capeval._process",
])
def test_no_heavy_module_is_imported(code):
    assert _loaded_after(code) == []


def test_the_probe_can_fail():
    """A heavy import is seen (so the checks above would fail if one crept in)."""
    pytest.importorskip("rich")
    assert _loaded_after("import capeval, rich") == ["rich"]


def test_import_capeval_loads_only_the_api_layer():
    """``score_stream`` and the metric families load on first use, not at ``import capeval``."""
    code = ("import sys, capeval\n"
            "print(sorted(m for m in sys.modules if m.startswith(('capeval.stream', 'capeval.metrics.bleu', "
            "'capeval.metrics.cider', 'capeval.metrics.rouge'))))\n"
            "from capeval import score_stream\n"
            "print(score_stream.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "capeval.stream.run"
