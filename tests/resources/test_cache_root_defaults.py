"""Models capeval installs or looks for by default live under the one cache root
(``paths.cache_root()``: ``$CAPEVAL_CACHE``), not always under ``~/.cache/capeval``."""
from __future__ import annotations

from capeval.resources import clip  # noqa: F401  (registers the CLIP resources)
from capeval.resources.encoders import MPNET
from capeval.resources.install import default_destination, installable
from capeval.resources.resolver import list_resources, resolve


def test_mpnet_installs_and_resolves_under_capeval_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("CAPEVAL_MPNET_DIR", raising=False)
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    dest = default_destination(installable("mpnet"))
    assert dest == tmp_path / "cache" / "all-mpnet-base-v2"
    dest.mkdir(parents=True)
    assert resolve(MPNET.name) == dest


def test_no_default_path_hard_codes_capevals_cache():
    for spec in list_resources():
        for d in spec.defaults:
            assert "capeval" not in d.split("{cache}")[0], (spec.name, d)
