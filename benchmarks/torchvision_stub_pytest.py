"""Run pytest with torchvision importable from its Python code alone, so the tests that compare
with the ``clip`` package and with open_clip run on a machine where torchvision's compiled
operators do not match the installed torch.

torchvision's package ``__init__`` registers compiled operators and fails with "operator
torchvision::nms does not exist" beside a torch it was not built for; the transforms and the
modules open_clip imports need none of them. This script registers a package stub for
``torchvision`` that points at a torchvision directory without running that ``__init__``, adds
``--site`` (a ``pip install --no-deps --target`` directory with open_clip_torch and openai-clip)
to the import path, and runs pytest in the same process:

    pip install --no-deps --target /tmp/tv torchvision==0.28.0
    pip install --no-deps --target /tmp/site open_clip_torch==3.3.0 openai-clip==1.0.1 'setuptools<75'
    python benchmarks/torchvision_stub_pytest.py --torchvision /tmp/tv/torchvision --site /tmp/site \\
        -- -q tests/metrics/test_clip.py tests/metrics/test_clip_bpe.py tests/metrics/test_clip_image.py
"""
from __future__ import annotations

import argparse
import importlib.machinery
import sys
import types
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torchvision", required=True)
    ap.add_argument("--site", required=True)
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    stub = types.ModuleType("torchvision")
    stub.__path__ = [args.torchvision]
    stub.__spec__ = importlib.machinery.ModuleSpec("torchvision", None, is_package=True)
    stub.__spec__.submodule_search_locations = stub.__path__
    sys.modules["torchvision"] = stub
    sys.path.insert(0, args.site)
    # Its distribution metadata (beside the package directory), which transformers reads.
    sys.path.append(str(Path(args.torchvision).resolve().parent))
    import pytest

    rest = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    return pytest.main(rest)


if __name__ == "__main__":
    sys.exit(main())
