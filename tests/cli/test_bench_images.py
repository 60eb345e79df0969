"""`capeval bench composite -m clip_s,refclip_s --images DIR -O clip_s.model=PATH` end to end on a
tiny COMPOSITE-format data root, synthetic images named as the loader names them, and a tiny
random CLIP: the run completes, its JSON numbers are capeval.score's on the same table, and the
HTML report shows both columns."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
pytest.importorskip("ftfy")

from typer.testing import CliRunner  # noqa: E402

from capeval.cli.main import app  # noqa: E402

from ..metrics._tiny_clip import WORDS, build_hf, synthetic_images  # noqa: E402

F8K = ["1000268201_693b08cb0e.jpg", "1001773457_577c3a7d70.jpg", "1002674143_1b742ab4b8.jpg"]
COCO = [391895, 522418]


def _caption(rng, n=6):
    return " ".join(rng.choice(WORDS, size=n))


def _data_root(root, rng):
    """COMPOSITE's decoded JSONL (Flickr8k rows carry their references; COCO rows take them
    from the Karpathy-test file aligned by Tanti's image list), 3 rows per image."""
    rows = []
    for name in F8K:
        refs = [_caption(rng) for _ in range(5)]
        for pos in range(3):
            rows.append({"subset": "flickr8k", "image": name, "position": pos,
                         "candidate": refs[0] if pos == 0 else _caption(rng), "score": int(rng.integers(1, 6)),
                         "refs_flickr8k": refs})
    coco_names = [f"COCO_val2014_{i:012d}.jpg" for i in COCO]
    coco_refs = {n: [_caption(rng) for _ in range(5)] for n in coco_names}
    for name in coco_names:
        for pos in range(3):
            rows.append({"subset": "coco", "image": name, "position": pos,
                         "candidate": coco_refs[name][0] if pos == 0 else _caption(rng),
                         "score": int(rng.integers(1, 6))})
    (root / "composite").mkdir(parents=True)
    (root / "composite" / "composite_umic_decoded.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tanti = root / "machine_captions" / "tanti2018_where-image2" / "results"
    tanti.mkdir(parents=True)
    (tanti / "imgs_mscoco.txt").write_text("".join(n + "\n" for n in coco_names), encoding="utf-8")
    karpathy = root / "references_karpathy_test" / "coco_precomp"
    karpathy.mkdir(parents=True)
    (karpathy / "testall_caps.txt").write_text("".join(r + "\n" for n in coco_names for r in coco_refs[n]),
                                               encoding="utf-8")
    return F8K + coco_names


def test_bench_composite_with_clip_s_and_refclip_s(tmp_path, monkeypatch):
    import capeval
    import capeval.data

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(7)
    names = _data_root(tmp_path / "data", rng)
    images = tmp_path / "images"
    for name, src in zip(names, synthetic_images(tmp_path / "src", sizes=[(224 + 16 * i, 200) for i in range(len(names))])):
        sub = images / ("coco" if name.startswith("COCO") else "flickr8k")  # searched recursively
        sub.mkdir(parents=True, exist_ok=True)
        from PIL import Image

        Image.open(src).convert("RGB").save(sub / name, format="JPEG")
    build_hf(tmp_path / "clip")
    js, report = tmp_path / "out.json", tmp_path / "report.html"
    res = CliRunner().invoke(app, [
        "bench", "composite", "-m", "clip_s,refclip_s", "--images", str(images),
        "-O", f"clip_s.model={tmp_path / 'clip'}", "--root", str(tmp_path / "data"), "--allow-modified-data",
        "-q", "--json", str(js), "--report", str(report),
    ])
    assert res.exit_code == 0, res.output
    doc = json.loads(js.read_text())
    html = report.read_text(encoding="utf-8")
    for name in ("clip_s", "refclip_s"):
        assert name in doc and doc[name]["n"] == 15 and f"<td>{name}</td>" in html
        sig = doc["_signatures"]["metrics"][name]
        assert "backend:transformers" in sig and "prompt:A photo depicts" in sig and "w:2.5" in sig

    # A second run is served from the score cache (its keys hold the images' content hashes) and
    # gives the same document.
    again = tmp_path / "again.json"
    res = CliRunner().invoke(app, [
        "bench", "composite", "-m", "clip_s,refclip_s", "--images", str(images),
        "-O", f"clip_s.model={tmp_path / 'clip'}", "--root", str(tmp_path / "data"), "--allow-modified-data",
        "-q", "--json", str(again),
    ])
    assert res.exit_code == 0, res.output
    second = json.loads(again.read_text())
    assert second["_meta"]["cached"] == {"clip_s": True, "refclip_s": True}
    assert {k: second[k] for k in ("clip_s", "refclip_s")} == {k: doc[k] for k in ("clip_s", "refclip_s")}

    # The benchmark's numbers are capeval.score's on the same table and images.
    table = capeval.data.load("composite", tmp_path / "data")
    paths = [str(next(images.rglob(n))) for n in table.images]
    direct = capeval.score(table.candidates, table.references, ["clip_s", "refclip_s"],
                           options={"clip_s": {"model": str(tmp_path / "clip")}}, images=paths)
    from scipy.stats import kendalltau

    for name in ("clip_s", "refclip_s"):
        want = kendalltau(direct.per_caption[name], table.human, variant="c").statistic
        assert doc[name]["kendall_tau_c"] == pytest.approx(want, abs=1e-12)

    # A replaced picture under the same file name is a miss.
    from PIL import Image

    first = next(images.rglob(names[0]))
    Image.open(first).transpose(Image.Transpose.ROTATE_90).save(first, format="JPEG")
    res = CliRunner().invoke(app, [
        "bench", "composite", "-m", "clip_s,refclip_s", "--images", str(images),
        "-O", f"clip_s.model={tmp_path / 'clip'}", "--root", str(tmp_path / "data"), "--allow-modified-data",
        "-q", "--json", str(again), "--overwrite",
    ])
    assert res.exit_code == 0, res.output
    assert json.loads(again.read_text())["_meta"]["cached"] == {"clip_s": False, "refclip_s": False}


def test_bench_with_an_image_metric_but_no_images_names_the_option(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    _data_root(tmp_path / "data", np.random.default_rng(7))
    res = CliRunner().invoke(app, ["bench", "composite", "-m", "bleu4,clip_s", "--root", str(tmp_path / "data"),
                                   "--allow-modified-data", "-q"])
    assert res.exit_code != 0 and "--images" in res.output
