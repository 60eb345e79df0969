"""CLIP-S, RefCLIP-S, PAC-S, RefPAC-S on a tiny random CLIP: against torchmetrics' CLIPScore,
against the papers' formulas read directly, across backends, and their errors.

No real weights or benchmark images exist here; the tiny model (``_tiny_clip``) exercises the
same code paths, and every check compares numbers computed by independent code.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
pytest.importorskip("ftfy")

from capeval.errors import InputError, ResourceNotFound
from capeval.metrics import _clip_models
from capeval.metrics._clip_image import preprocess_image
from capeval.metrics.clipscore import ClipScore, PacScore

from ._tiny_clip import build_hf, save_openai, synthetic_images

CANDS = ["a dog runs on the grass", "two cats sleep in a sunny room", "a man rides a red bike down the street",
         "children play ball near the water", "a photo of a dog"]
REFS = [["a dog on grass", "the dog runs"], ["cats sleep"], ["a man on a bike", "red bike", "a street"],
        ["children near water", "two children play ball"], ["a dog"]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tinyclip")
    model, merges = build_hf(root / "hf")
    pt = save_openai(model, root / "tiny.pt")
    pacs = save_openai(model, root / "tiny_pacs.pth", wrap=True)
    images = [str(p) for p in synthetic_images(root / "img")]
    return {"root": root, "hf": model, "hf_dir": root / "hf", "pt": pt, "pacs": pacs, "merges": merges,
            "images": images}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path / "cache"))
    _clip_models._memory.clear()


def _direct_embeddings(tiny, texts, images, backend):
    """Embeddings straight from the model a backend runs (no batching, caching or scoring code):
    transformers' CLIPModel with its tokenizer, or the OpenAI-format module with CLIP's BPE."""
    import torch
    from PIL import Image

    px = torch.from_numpy(np.stack([preprocess_image(Image.open(p), 224) for p in images]))
    with torch.no_grad():
        if backend == "transformers":
            from transformers import AutoTokenizer

            model = tiny["hf"]
            enc = AutoTokenizer.from_pretrained(tiny["hf_dir"])(texts, padding=True, return_tensors="pt")
            t = model.text_projection(model.text_model(**enc).pooler_output)
            v = model.visual_projection(model.vision_model(pixel_values=px).pooler_output)
        else:
            from capeval.metrics._clip_bpe import ClipBPE
            from capeval.metrics._clip_openai import build, read_state_dict

            model = build(read_state_dict(tiny["pt"]))
            rows = ClipBPE(tiny["merges"]).tokenize(texts)
            ids = torch.zeros(len(rows), 77, dtype=torch.long)
            for i, r in enumerate(rows):
                ids[i, :len(r)] = torch.tensor(r)
            t, v = model.encode_text(ids), model.encode_image(px)
    return t.double().numpy(), v.double().numpy()


def _paper(tiny, cands, refs, images, w, backend, prompt="A photo depicts "):
    """CLIP-S and RefCLIP-S read off the paper, one caption at a time, in float64."""
    flat = [r for rs in refs for r in rs]
    t, v = _direct_embeddings(tiny, [prompt + c for c in cands + flat], images, backend)

    def cos(a, b):
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    clip_s, ref_s, j = [], [], len(cands)
    for i, rs in enumerate(refs):
        s = w * max(cos(t[i], v[i]), 0.0)
        r = max(max(cos(t[i], t[j + k]) for k in range(len(rs))), 0.0)
        j += len(rs)
        clip_s.append(s)
        ref_s.append(0.0 if s + r == 0 else 2 * s * r / (s + r))
    return np.array(clip_s), np.array(ref_s)


def _images_for(tiny, n):
    return [tiny["images"][i % len(tiny["images"])] for i in range(n)]


@pytest.mark.parametrize("backend", ["openai", "transformers"])
def test_clip_s_and_refclip_s_follow_the_paper(tiny, backend):
    model = tiny["pt"] if backend == "openai" else tiny["hf_dir"]
    images = _images_for(tiny, len(CANDS))
    m = ClipScore(model=str(model), tokenizer=str(tiny["merges"]) if backend == "openai" else None)
    out = m.compute(CANDS, REFS, images=images)
    want_s, want_ref = _paper(tiny, CANDS, REFS, images, 2.5, backend)
    np.testing.assert_allclose(out.per_caption["clip_s"], want_s, rtol=0, atol=1e-6)
    np.testing.assert_allclose(out.per_caption["refclip_s"], want_ref, rtol=0, atol=1e-6)
    assert out.corpus["clip_s"] == pytest.approx(float(np.mean(want_s)), abs=1e-6)
    assert out.corpus["refclip_s"] == pytest.approx(float(np.mean(want_ref)), abs=1e-6)
    # The tiny model must exercise the clip at zero and positive scores alike.
    assert (want_s == 0).any() and (want_s > 0).any()


def test_pac_s_and_refpac_s_follow_the_paper(tiny):
    images = _images_for(tiny, len(CANDS))
    m = PacScore(model=str(tiny["pacs"]), tokenizer=str(tiny["merges"]))
    out = m.compute(CANDS, REFS, images=images)
    want_s, want_ref = _paper(tiny, CANDS, REFS, images, 2.0, "openai")
    np.testing.assert_allclose(out.per_caption["pac_s"], want_s, rtol=0, atol=1e-6)
    np.testing.assert_allclose(out.per_caption["refpac_s"], want_ref, rtol=0, atol=1e-6)
    assert out.signature_fields["w"] == 2.0


class _Unwrapped:
    """torchmetrics 1.9 divides what ``get_*_features`` returns by its norm, but transformers 5
    returns a model output there; this hands torchmetrics the projected embedding, nothing else."""

    def __init__(self, model):
        self.model = model
        self.config = model.config

    def to(self, device):
        self.model.to(device)
        return self

    def get_image_features(self, *a, **k):
        out = self.model.get_image_features(*a, **k)
        return out if hasattr(out, "norm") else out.pooler_output

    def get_text_features(self, *a, **k):
        out = self.model.get_text_features(*a, **k)
        return out if hasattr(out, "norm") else out.pooler_output


def test_clip_s_equals_torchmetrics_clipscore_rescaled_to_w(tiny):
    """Per caption, on 224x224 images (torchmetrics preprocesses through CLIPImageProcessor,
    which crops odd margins differently; at 224 both only rescale and normalise)."""
    import torch
    from PIL import Image
    from torchmetrics.multimodal.clip_score import CLIPScore
    from transformers import AutoTokenizer, CLIPImageProcessor, CLIPProcessor

    folder = tiny["root"] / "square"
    paths = [str(p) for p in synthetic_images(folder, sizes=((224, 224),) * len(CANDS), seed=3)]
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(), tokenizer=AutoTokenizer.from_pretrained(tiny["hf_dir"]))
    tm = CLIPScore(model_name_or_path=lambda: (_Unwrapped(tiny["hf"]), processor))
    ours = ClipScore(model=str(tiny["hf_dir"])).compute(CANDS, REFS, images=paths).per_caption["clip_s"]
    assert (ours > 0).sum() >= 2  # the comparison is not all clipped zeros
    for cand, path, got in zip(CANDS, paths, ours):
        tm.reset()
        pixels = torch.from_numpy(np.array(Image.open(path).convert("RGB"))).permute(2, 0, 1)
        tm.update(pixels, "A photo depicts " + cand)
        assert got == pytest.approx(float(tm.compute()) * 2.5 / 100, abs=1e-6)


def test_backends_give_the_same_embeddings(tiny):
    a = _clip_models.load(str(tiny["pt"]), default_resource="clip-vit-b32", tokenizer=str(tiny["merges"]))
    b = _clip_models.load(str(tiny["hf_dir"]), default_resource="clip-vit-b32")
    ea, _ = _clip_models.image_embeddings(a, tiny["images"], batch_size=2, disk=False)
    eb, _ = _clip_models.image_embeddings(b, tiny["images"], batch_size=3, disk=False)
    np.testing.assert_allclose(ea, eb, rtol=1e-5, atol=1e-5)
    texts = ["A photo depicts " + c for c in CANDS]
    np.testing.assert_allclose(_clip_models.text_embeddings(a, texts, batch_size=2),
                               _clip_models.text_embeddings(b, texts, batch_size=4), rtol=1e-5, atol=1e-5)


@pytest.mark.needs("module:open_clip")
def test_open_clip_backend_matches_the_own_module(tiny):
    images = _images_for(tiny, 3)
    # open_clip tokenizes with its own (the real) vocabulary, so only the image side is comparable here.
    a = _clip_models.load(str(tiny["pt"]), default_resource="clip-vit-b32", backend="open_clip")
    b = _clip_models.load(str(tiny["pt"]), default_resource="clip-vit-b32", tokenizer=str(tiny["merges"]))
    ea, _ = _clip_models.image_embeddings(a, images, batch_size=2, disk=False)
    eb, _ = _clip_models.image_embeddings(b, images, batch_size=2, disk=False)
    np.testing.assert_allclose(ea, eb, rtol=1e-5, atol=1e-5)


def test_each_image_is_decoded_once_and_embeddings_are_kept_on_disk(tiny, monkeypatch):
    calls = []
    real = _clip_models.decode
    monkeypatch.setattr(_clip_models, "decode", lambda data, name: calls.append(name) or real(data, name))
    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    images = _images_for(tiny, 12)  # 5 distinct files, each used more than once
    first = m.compute(["a dog"] * 12, [["a dog"]] * 12, images=images)
    assert len(calls) == 5 and first.details["images"] == {"images": 12, "distinct": 5, "embedded": 5}
    _clip_models._memory.clear()  # a new process: only the disk shards remain
    again = m.compute(["a dog"] * 12, [["a dog"]] * 12, images=images)
    assert len(calls) == 5 and again.details["images"]["embedded"] == 0
    np.testing.assert_array_equal(first.per_caption["clip_s"], again.per_caption["clip_s"])


def test_signature_names_backend_model_prompt_w_and_preprocessing(tiny):
    from capeval.digests import sha256_file

    out = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"])).compute(
        CANDS[:2], REFS[:2], images=_images_for(tiny, 2))
    f = out.signature_fields
    assert f["backend"] == "openai" and f["model"] == sha256_file(tiny["pt"])
    assert f["prompt"] == "A photo depicts" and f["w"] == 2.5
    assert f["pre"].startswith("resize-short-bicubic-center-crop") and f["cliptok"].endswith("trunc77")
    assert ClipScore.cache_token({"model": str(tiny["pt"])}) == sha256_file(tiny["pt"])


def test_refclip_s_without_references_is_nan_and_two_zeros_give_zero():
    from capeval.metrics.clipscore import harmonic, reference_cosines

    cand = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    refs = np.array([[-1.0, 0.0]], np.float32)  # one negative cosine, for the first candidate only
    r = reference_cosines(cand, refs, np.array([0]), 2)
    assert r[0] == 0 and math.isnan(r[1])
    h = harmonic(np.array([0.0, 1.0]), r)
    assert h[0] == 0 and math.isnan(h[1])


def test_missing_model_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CAPEVAL_CLIP_MODEL", raising=False)
    with pytest.raises(ResourceNotFound, match=r"CAPEVAL_CLIP_MODEL.*~/.cache/clip|~/.cache/clip.*CAPEVAL_CLIP_MODEL"):
        ClipScore()
    with pytest.raises(ResourceNotFound, match="CAPEVAL_PACS_MODEL"):
        PacScore()
    with pytest.raises(ResourceNotFound, match="not found"):
        ClipScore(model=str(tmp_path / "nope.pt"))
    with pytest.raises(ResourceNotFound, match="not in the local Hugging Face cache"):
        ClipScore(model="someone/not-a-cached-clip")


def test_missing_or_unreadable_image_is_named(tiny, tmp_path):
    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    with pytest.raises(InputError, match="gone.png"):
        m.compute(["a dog"], [["a dog"]], images=[str(tmp_path / "gone.png")])
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not an image")
    with pytest.raises(InputError, match="bad.jpg"):
        m.compute(["a dog"], [["a dog"]], images=[str(bad)])


def test_needs_images(tiny):
    import capeval

    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    with pytest.raises(InputError, match="images"):
        m.compute(["a dog"], [["a dog"]])
    with pytest.raises(InputError, match="--images"):
        capeval.score(["a dog"], [["a dog"]], ["clip_s"], options={"clip_s": {"model": str(tiny["pt"])}})


def test_options_are_checked(tiny):
    for bad in ({"batch_size": 0}, {"w": -1}, {"fp16": "yes"}, {"prompt": "a|b"}, {"backend": "jax"}):
        with pytest.raises(InputError):
            ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]), **bad)
    with pytest.raises(InputError, match="GPU"):
        ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]), fp16=True)
    with pytest.raises(InputError, match="directory"):
        ClipScore(model=str(tiny["pt"]), backend="transformers")


def test_cutting_the_padding_changes_embeddings_by_float32_rounding_only(tiny, monkeypatch):
    """clip.tokenize pads every text to 77 tokens; the backend cuts each row after its end
    token. Attention is causal, so the padding never reaches the end token and both compute one
    function, and they differ only in how sums are grouped (softmax and attention sums over 77
    or n positions, matrix products of another size; which kernels the CPU's BLAS picks). In
    float32 the tolerance is float32's own rounding on these inputs: twice the padded path's
    largest distance from the float64 result (each path may lie that far from it, on either
    side). In float64 it is that tolerance scaled by the ratio of the unit roundoffs (2^-53 /
    2^-24), times 16 because one measured rounding is a sample, not a bound. A real difference
    (a wrong end position, padding that leaks) is orders larger than either."""
    import copy

    import torch

    from capeval.metrics._clip_bpe import ClipBPE
    from capeval.metrics._clip_openai import build, read_state_dict

    model = build(read_state_dict(tiny["pt"]))
    # Its LayerNorm computes in float32 (for float16 weights); the float64 copy must not.
    monkeypatch.setattr(type(model.ln_final), "forward", torch.nn.LayerNorm.forward)
    exact = copy.deepcopy(model).double()
    rows = ClipBPE(tiny["merges"]).tokenize(["A photo depicts " + c for c in CANDS])
    full = torch.zeros(len(rows), 77, dtype=torch.long)
    for i, r in enumerate(rows):
        full[i, :len(r)] = torch.tensor(r)
    cut = full[:, :max(map(len, rows))]
    with torch.no_grad():
        a, b = model.encode_text(full).double(), model.encode_text(cut).double()
        a64, b64 = exact.encode_text(full), exact.encode_text(cut)
    tol = 2 * (a - a64).abs().max().item()
    unit = 2.0 ** -24 * a.abs().max().item()  # float32's unit roundoff at the embeddings' scale
    assert 0 < tol < 1000 * unit, (tol, unit)  # the float32 path is close to exact: tol is rounding
    assert (a - b).abs().max().item() <= tol
    assert (a64 - b64).abs().max().item() <= 16 * tol * 2.0 ** -29


def test_half_precision_embeddings_are_scored_in_half_precision():
    """Under fp16 the scripts normalise and multiply float16 arrays; the formula functions keep
    the embeddings' precision instead of widening them."""
    from capeval.metrics.clipscore import harmonic, image_text_scores, reference_cosines

    rng = np.random.default_rng(0)
    img, cand, refs = (rng.normal(size=(k, 16)) for k in (4, 4, 7))
    owner = np.array([0, 0, 1, 2, 2, 2, 3])
    s16 = image_text_scores(img.astype(np.float16), cand.astype(np.float16), 2.5)
    r16 = reference_cosines(cand.astype(np.float16), refs.astype(np.float16), owner, 4)
    h16 = harmonic(s16, r16)
    assert s16.dtype == r16.dtype == h16.dtype == np.float16
    s64 = image_text_scores(img, cand, 2.5)
    r64 = reference_cosines(cand, refs, owner, 4)
    assert s64.dtype == np.float32  # float64 input is scored in float32, as the scripts' features
    np.testing.assert_allclose(s16, s64, atol=5e-3)
    np.testing.assert_allclose(r16, r64, atol=5e-3)
    np.testing.assert_allclose(h16, harmonic(s64, r64), atol=5e-3)


def test_a_candidate_without_an_image_is_named(tiny):
    m = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]))
    with pytest.raises(InputError, match="candidate 1 has no image"):
        m.compute(["a dog", "a cat"], [["a dog"], ["a cat"]], images=[tiny["images"][0], None])


@pytest.mark.filterwarnings("ignore")  # torch.jit deprecation and tracer notes while building the stand-in
def test_a_torchscript_archive_loads_like_openais_release(tiny, tmp_path):
    """OpenAI's ViT-B-32.pt is a TorchScript archive, not a pickled state dict."""
    import torch

    from capeval.metrics._clip_openai import build, read_state_dict

    model = build(read_state_dict(tiny["pt"]))

    class Both(type(model)):
        def forward(self, pixels, ids):
            return self.encode_image(pixels), self.encode_text(ids)

    model.__class__ = Both
    px, ids = torch.zeros(1, 3, 224, 224), torch.zeros(1, 77, dtype=torch.long)
    ids[0, :3] = torch.tensor([5, 6, 7])
    archive = tmp_path / "ViT-tiny.pt"
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, (px, ids)), str(archive))
    sd = read_state_dict(archive)
    want = read_state_dict(tiny["pt"])
    assert sorted(sd) == sorted(want) and all(torch.equal(sd[k], want[k]) for k in want)
    images = _images_for(tiny, 3)
    a = ClipScore(model=str(archive), tokenizer=str(tiny["merges"]), embedding_cache=False).compute(
        CANDS[:3], REFS[:3], images=images)
    b = ClipScore(model=str(tiny["pt"]), tokenizer=str(tiny["merges"]), embedding_cache=False).compute(
        CANDS[:3], REFS[:3], images=images)
    np.testing.assert_array_equal(a.per_caption["clip_s"], b.per_caption["clip_s"])
