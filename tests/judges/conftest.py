from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_judge(tmp_path_factory):
    """A tiny random Llama-style causal LM directory (built once per session)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.judges._tiny import build_causal

    return build_causal(tmp_path_factory.mktemp("tiny-judge"))


@pytest.fixture(scope="session")
def local_backend(tiny_judge):
    from capeval.judges.local import LocalBackend

    return LocalBackend(str(tiny_judge))


@pytest.fixture()
def server(local_backend):
    from tests.judges._server import JudgeServer

    with JudgeServer(local_backend) as s:
        yield s


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory):
    """A tiny random LLaVA-style image-text model directory with its processor."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("PIL")
    from tests.judges._tiny import build_llava

    return build_llava(tmp_path_factory.mktemp("tiny-llava"))


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("judge-images")
    paths = []
    for k, color in enumerate(["red", "blue", "green"]):
        p = folder / f"img{k}.png"
        Image.new("RGB", (20 + k, 16), color).save(p)
        paths.append(str(p))
    return paths
