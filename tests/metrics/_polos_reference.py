"""Score captions with the ``polos`` package itself (run by its own interpreter, made by
scripts/make_polos_reference_venv.sh): ``python _polos_reference.py IN.json OUT.json``.

IN.json: {"checkpoint", "clip_weights", "clip_merges", "batch_size",
"rows": [{"mt", "refs", "img"}]}; OUT.json: {"scores": [...]}.

The package's own code scores (``polos.models.load_checkpoint`` and ``PolosEstimator.predict``);
four things are put in front of it, none in the path a number takes:

* ``PolosEstimator._build_model`` calls ``clip.load("ViT-B/32", device="cuda")``, which downloads
  OpenAI's weights and needs a GPU: ``polos.clip.load`` is replaced by what it does with a state
  dict on the CPU (``build_model(state_dict)``, ``.float()``, ``_transform(input_resolution)``,
  the package's own functions) over the tiny CLIP's weights, which the checkpoint's ``clip.*``
  weights then replace, as they replace the real ones;
* ``polos.clip`` tokenizes with a module-level ``SimpleTokenizer`` over the 49,408-token BPE file
  it ships; the tiny CLIP has a tiny vocabulary, so that tokenizer is rebuilt by the same class
  over the tiny merges file;
* ``polos.models`` imports fairseq for its XLM-R encoder (not used by a ``BERT`` checkpoint):
  an empty ``fairseq.models.roberta`` module stands in;
* torchvision's package ``__init__`` registers its compiled detection ops, which the only
  torchvision for this torch (a CUDA build) cannot load beside the CPU torch: the package is
  entered without its ``__init__``, so ``torchvision.transforms`` (pure Python, what
  ``polos.clip`` uses) is the installed code, unchanged.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import types


def _stand_ins() -> None:
    spec = importlib.util.find_spec("torchvision")
    pkg = types.ModuleType("torchvision")
    pkg.__path__ = list(spec.submodule_search_locations)
    pkg.__spec__ = spec
    pkg.__file__ = spec.origin
    sys.modules["torchvision"] = pkg
    for name in ("fairseq", "fairseq.models", "fairseq.models.roberta"):
        sys.modules[name] = types.ModuleType(name)

    class XLMRModel:  # only the XLM-R encoder would build one
        def __init__(self, *a, **k):
            raise RuntimeError("fairseq is not installed in the reference environment")

    sys.modules["fairseq.models.roberta"].XLMRModel = XLMRModel


def main(src: str, dst: str) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    _stand_ins()
    import torch
    from PIL import Image

    torch.set_num_threads(1)
    job = json.load(open(src, encoding="utf-8"))
    import polos.clip as pclip
    from polos.simple_tokenizer import SimpleTokenizer

    pclip._tokenizer = SimpleTokenizer(bpe_path=job["clip_merges"])
    def load(name, device="cpu", jit=False, download_root=None):
        net = pclip.build_model(torch.load(job["clip_weights"], map_location="cpu", weights_only=True)).float()
        return net, pclip._transform(net.visual.input_resolution)

    pclip.load = load
    from polos.models import load_checkpoint

    model = load_checkpoint(job["checkpoint"])
    rows = [{"mt": r["mt"], "refs": r["refs"], "img": Image.open(r["img"]).convert("RGB")} for r in job["rows"]]
    _, scores = model.predict(rows, cuda=False, show_progress=False, batch_size=job["batch_size"])
    json.dump({"scores": [float(s) for s in scores]}, open(dst, "w", encoding="utf-8"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
