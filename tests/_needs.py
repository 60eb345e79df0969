"""The requirements of ``@pytest.mark.needs`` (tests/conftest.py): how each is checked, and the
ones CI may lack.

Every check is cheap and imports nothing heavy: a path, PATH, ``importlib.util.find_spec``, the
resource resolver (which only looks for files). The checks run once per session, at collection.

``data``                  the benchmark data (``CAPEVAL_DATA``, default ../shared/data)
``data:REL``              that file or folder inside it
``java``                  a java binary (``CAPEVAL_JAVA`` or PATH)
``chromium``              a headless Chromium on PATH (the HTML report test)
``compiled``              every compiled core (``compiled:speedups``, ``compiled:meteor``,
                          ``compiled:paratable`` for one); none when ``CAPEVAL_PURE_PYTHON`` is set
``extra:NAME``            the modules of capeval's extra NAME (:data:`capeval.extras.EXTRA_MODULES`)
``model:RESOURCE``        a resource the resolver finds (``capeval models list`` names them),
                          ``model:spacy-sm``, SPICE-py's default spaCy pipeline (installed as a
                          package), or ``model:qace-img``, never met (QACE-Img has no default reader)
``module:NAME``           an importable module (an oracle the tests compare with)
``env:NAME``              the environment variable NAME set to 1 (a long check run on demand)
``polos-reference``       the polos package's own interpreter (``CAPEVAL_POLOS_PYTHON``, default
                          /tmp/polos-ref-venv/bin/python; scripts/make_polos_reference_venv.sh)
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil

#: Requirements whose absence CAPEVAL_STRICT_SKIPS=1 accepts: the files no registry or apt
#: package gives a machine (the user's own downloads), each with why.
ALLOWED_ABSENT: dict[str, str] = {
    "model:clip-vit-b32": "OpenAI's CLIP ViT-B/32 weights: a file the user downloads",
    "model:pacs-vit-b32": "the PAC-S checkpoint released with aimagelab/pacscore: a file the user downloads",
    "model:corenlp-3.6.0": "Stanford CoreNLP 3.6.0 (original SPICE's jar backend): from nlp.stanford.edu only",
    "model:qace-img": "QACE-Img's Visual-T5 checkpoint and BUTD features: on no registry",
    # Polos's checkpoint (reprod.zip, tests/metrics/test_polos.py builds a tiny one) and the model
    # judges' endpoint or model directory (tests/judges: tiny random models, a loopback server).
    "model:user-supplied": "a model with no default that the user brings: Polos's checkpoint, a judge's endpoint "
                           "or model directory",
    "env:CAPEVAL_CHECK_SHIPPED_LEARNED": "the learned metric's full retrain: over 17 minutes cold on 2 cores",
    # Oracles of the CLIP tests: both import torchvision, and PyPI's torchvision 0.28.0 (the one
    # for torch 2.13.0) does not import beside the CPU torch 2.13.0 (RuntimeError: operator
    # torchvision::nms does not exist).
    "module:open_clip": "open_clip_torch needs a torchvision that imports beside the CPU torch 2.13.0",
    "module:clip": "OpenAI's clip package needs a torchvision that imports beside the CPU torch 2.13.0",
}

#: What SPICE-py's pieces need: spaCy and its default pipeline; WordNet 3.0 read through NLTK;
#: both (the scorer).
SPACY = ("extra:semantic", "model:spacy-sm")
WORDNET = ("extra:semantic", "model:wordnet")
SPICE_PY = (*SPACY, "model:wordnet")
#: QACE-Ref's offline backend: SPICE-py's parser and WordNet, BERTScore with the packaged MiniLM.
QACE_REF = (*SPICE_PY, "extra:bertscore", "model:encoder-minilm-l6")


MINILM = "model:encoder-minilm-l6"  # the default encoder of BERTScore and the sentence similarity
GLOVE = "model:glove-6b-50d"  # the default vectors of WMD and WEmbSim
#: Built-in metric family -> what its default options read besides its pip extras.
FAMILY_NEEDS: dict[str, tuple[str, ...]] = {
    "bertscore": (MINILM,), "sentsim": (MINILM,), "wmd": (GLOVE,), "wembsim": (GLOVE,),
    "meteor": ("module:pycocoevalcap",),  # native METEOR reads the resources of pycocoevalcap's jar
    "spice": SPICE_PY, "spider": SPICE_PY, "qace_ref": QACE_REF, "qace_img": ("model:qace-img",),
    "polos": ("model:user-supplied",),
    "clair": ("model:user-supplied",), "fleur": ("model:user-supplied",), "reffleur": ("model:user-supplied",),
    "pairjudge": ("model:user-supplied",),
    "nneval": (*SPICE_PY, GLOVE, "module:pycocoevalcap"),
    "learned": (*SPICE_PY, GLOVE, MINILM, "module:pycocoevalcap"),
}


def polos_python() -> str:
    """The interpreter of the polos package's own venv (scripts/make_polos_reference_venv.sh)."""
    return os.environ.get("CAPEVAL_POLOS_PYTHON") or "/tmp/polos-ref-venv/bin/python"


def family_needs(cls) -> tuple[str, ...]:
    """What metric family ``cls`` needs to score with its default options: its extras, and
    what :data:`FAMILY_NEEDS` names."""
    return (*(f"extra:{e}" for e in cls.extras), *FAMILY_NEEDS.get(cls.family, ()))


def requires(*needs: str):
    """The requirements of a fixture: every test using it (directly or through other fixtures)
    needs them. Put it below ``@pytest.fixture``, on the function itself."""
    def mark(fn):
        fn.capeval_needs = needs
        return fn
    return mark


COMPILED = {
    "speedups": "capeval._speedups",
    "meteor": "capeval._meteor_speedups",
    "paratable": "capeval.metrics._meteor_native._paratable",
}
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def unmet(need: str) -> str | None:
    """None when ``need`` is met on this machine, else why not (one line)."""
    kind, _, name = need.partition(":")
    if kind == "data":
        from capeval.paths import data_root

        root = data_root()
        if root is None:
            return "benchmark data not found: set CAPEVAL_DATA (default ../shared/data)"
        return None if not name or (root / name).exists() else f"{root / name} not found"
    if kind == "java" and not name:
        return None if os.environ.get("CAPEVAL_JAVA") or shutil.which("java") else "Java not installed"
    if kind == "chromium" and not name:
        return None if any(shutil.which(b) for b in CHROMIUM) else "no chromium on PATH (apt-get install chromium)"
    if kind == "compiled" and (not name or name in COMPILED):
        if os.environ.get("CAPEVAL_PURE_PYTHON", "") not in ("", "0"):
            return "CAPEVAL_PURE_PYTHON is set"
        absent = [m for k, m in COMPILED.items() if (not name or k == name) and not _importable(m)]
        return f"not built: {', '.join(absent)}" if absent else None
    if kind == "extra" and name:
        from capeval.extras import EXTRA_MODULES, install_hint, missing_modules

        if name not in EXTRA_MODULES:
            raise ValueError(f"needs: unknown extra {name!r} (known: {', '.join(EXTRA_MODULES)})")
        absent = missing_modules(name)
        return f"{', '.join(absent)} missing: {install_hint([name])}" if absent else None
    if kind == "env" and name:
        return None if os.environ.get(name) == "1" else f"set {name}=1 to run it"
    if kind == "module" and name:
        return None if _importable(name) else f"{name} is not installed"
    if kind == "model" and name == "spacy-sm":
        from capeval.scenegraph.parser import DEFAULT_MODEL

        return None if _importable(DEFAULT_MODEL) else f"spaCy pipeline {DEFAULT_MODEL} is not installed"
    if kind == "model" and name == "user-supplied":
        return ("no default model: the user gives Polos's checkpoint (docs/POLOS.md) or a judge's endpoint or "
                "model directory (docs/JUDGES.md)")
    if kind == "polos-reference" and not name:
        py = polos_python()
        return None if os.path.exists(py) else f"no polos reference interpreter at {py} (sh scripts/make_polos_reference_venv.sh)"
    if kind == "model" and name == "qace-img":
        # No resource: the user passes a reader built from their copy (docs/QACE.md).
        return "QACE-Img's Visual-T5 checkpoint is on no registry; capeval has no default reader"
    if kind == "model" and name:
        from capeval.errors import ResourceNotFound
        from capeval.resources.resolver import get_spec, resolve

        get_spec(name)  # an unknown name is the test's mistake: raise
        try:
            resolve(name)
        except ResourceNotFound as exc:
            return str(exc)
        return None
    raise ValueError(f"needs: unknown requirement {need!r} (see tests/_needs.py)")
