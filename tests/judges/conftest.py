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
