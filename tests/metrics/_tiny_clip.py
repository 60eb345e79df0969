"""A tiny random CLIP in both weight formats, a BPE vocabulary for it, and synthetic images.

The transformers ``CLIPModel`` is built from a tiny ``CLIPConfig``; its weights are renamed into
an OpenAI-format state dict (``clip.model.CLIP``'s names), so both backends hold the same
numbers and any difference between them comes from the code that runs them.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

WORDS = ("a dog runs on the grass ; two cats sleep in sunny room , man rides red bike down street "
         "photo depicts children play ball near water").split()


def merges_for(words) -> list[tuple[str, str]]:
    """Left-to-right merges that build each word (with its end-of-word mark) into one symbol."""
    out: list[tuple[str, str]] = []
    for word in dict.fromkeys(w.lower() for w in words):
        symbols = list(word[:-1]) + [word[-1] + "</w>"]
        acc = symbols[0]
        for nxt in symbols[1:]:
            if (acc, nxt) not in out:
                out.append((acc, nxt))
            acc += nxt
    return out


def write_tokenizer_files(folder: Path) -> tuple[Path, list[str]]:
    """CLIP's merges file (OpenAI's gzip format) and the matching transformers files; returns
    the merges path and the vocabulary in id order."""
    from capeval.metrics._clip_bpe import byte_to_unicode

    folder.mkdir(parents=True, exist_ok=True)
    merges = merges_for(WORDS + ["A", "Photo"])
    body = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    merges_gz = folder / "bpe_tiny.txt.gz"
    merges_gz.write_bytes(gzip.compress(body.encode()))
    symbols = list(byte_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges] + ["<|startoftext|>", "<|endoftext|>"]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}), encoding="utf-8")
    (folder / "merges.txt").write_text(body, encoding="utf-8")
    return merges_gz, vocab


def build_hf(folder: Path, seed: int = 2):
    """Save a tiny random CLIPModel and its tokenizer to ``folder``; returns the model."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPTokenizer

    merges_gz, vocab = write_tokenizer_files(folder / "tok")
    n = len(vocab)
    config = CLIPConfig(
        text_config=dict(vocab_size=n, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=1, max_position_embeddings=77, hidden_act="quick_gelu",
                         bos_token_id=n - 2, eos_token_id=n - 1, pad_token_id=n - 1),
        vision_config=dict(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2,
                           image_size=224, patch_size=32, hidden_act="quick_gelu"),
        projection_dim=32,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    with torch.no_grad():  # spread the weights so cosines take both signs (seed 2: 4 of 5 positive)
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.2)
    model.save_pretrained(folder)
    tok = CLIPTokenizer(str(folder / "tok" / "vocab.json"), str(folder / "tok" / "merges.txt"),
                        pad_token="<|endoftext|>")
    tok.save_pretrained(folder)
    return model, merges_gz


def openai_state_dict(model) -> dict:
    """The CLIPModel's weights under OpenAI's names (``in_proj`` = q, k, v stacked)."""
    import torch

    hf = model.state_dict()
    sd: dict = {}

    def tower(src: str, dst: str, layers: int) -> None:
        for i in range(layers):
            a, b = f"{src}.encoder.layers.{i}", f"{dst}transformer.resblocks.{i}"
            for kind in ("weight", "bias"):
                sd[f"{b}.attn.in_proj_{kind}"] = torch.cat(
                    [hf[f"{a}.self_attn.{x}_proj.{kind}"] for x in "qkv"])
                sd[f"{b}.attn.out_proj.{kind}"] = hf[f"{a}.self_attn.out_proj.{kind}"]
                sd[f"{b}.ln_1.{kind}"] = hf[f"{a}.layer_norm1.{kind}"]
                sd[f"{b}.ln_2.{kind}"] = hf[f"{a}.layer_norm2.{kind}"]
                sd[f"{b}.mlp.c_fc.{kind}"] = hf[f"{a}.mlp.fc1.{kind}"]
                sd[f"{b}.mlp.c_proj.{kind}"] = hf[f"{a}.mlp.fc2.{kind}"]

    cfg = model.config
    tower("vision_model", "visual.", cfg.vision_config.num_hidden_layers)
    tower("text_model", "", cfg.text_config.num_hidden_layers)
    sd["visual.conv1.weight"] = hf["vision_model.embeddings.patch_embedding.weight"]
    sd["visual.class_embedding"] = hf["vision_model.embeddings.class_embedding"]
    sd["visual.positional_embedding"] = hf["vision_model.embeddings.position_embedding.weight"]
    for kind in ("weight", "bias"):
        sd[f"visual.ln_pre.{kind}"] = hf[f"vision_model.pre_layrnorm.{kind}"]
        sd[f"visual.ln_post.{kind}"] = hf[f"vision_model.post_layernorm.{kind}"]
        sd[f"ln_final.{kind}"] = hf[f"text_model.final_layer_norm.{kind}"]
    sd["visual.proj"] = hf["visual_projection.weight"].T.contiguous()
    sd["token_embedding.weight"] = hf["text_model.embeddings.token_embedding.weight"]
    sd["positional_embedding"] = hf["text_model.embeddings.position_embedding.weight"]
    sd["text_projection"] = hf["text_projection.weight"].T.contiguous()
    sd["logit_scale"] = hf["logit_scale"]
    return {k: v.clone() for k, v in sd.items()}


def save_openai(model, path: Path, wrap: bool = False) -> Path:
    """Save the OpenAI-format state dict (``{"state_dict": ...}`` as PAC-S releases it when ``wrap``)."""
    import torch

    sd = openai_state_dict(model)
    torch.save({"state_dict": sd} if wrap else sd, path)
    return path


def synthetic_images(folder: Path, sizes=((224, 224), (300, 200), (199, 421), (64, 97), (512, 512)),
                     seed: int = 0) -> list[Path]:
    """PNG and JPEG images of several sizes and modes, with smooth gradients plus noise."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = []
    for i, (w, h) in enumerate(sizes):
        yy, xx = np.mgrid[0:h, 0:w]
        base = np.stack([(xx * (i + 1)) % 256, (yy * 3 + i * 40) % 256, (xx + yy) % 256], axis=-1)
        arr = np.clip(base + rng.integers(-30, 30, size=base.shape), 0, 255).astype(np.uint8)
        img = Image.fromarray(arr, "RGB")
        if i % 3 == 1:
            path = folder / f"img{i}.jpg"
            img.save(path, quality=90)
        elif i % 3 == 2:
            path = folder / f"img{i}.png"
            img.convert("L").save(path)  # a grey image: the RGB conversion comes after the crop
        else:
            path = folder / f"img{i}.png"
            img.save(path)
        out.append(path)
    return out
