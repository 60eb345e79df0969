"""A tiny random Polos checkpoint in the layout the ``polos`` package (0.1.3) loads: a folder
with ``model.ckpt`` (a Lightning-style ``{"state_dict": ...}`` with PolosEstimator's parameter
names), ``hparams.yaml`` beside it, the tiny RoBERTa directory its ``pretrained_model`` names,
CLIP's tiny BPE merges file, and synthetic images.

Sizes: RoBERTa hidden 32, 2 layers (a scalar mix over 3 hidden states); CLIP text width 64,
vision width 128, embeddings of 512 (PolosEstimator hard-codes 512 CLIP features); the head
4*32 + 6*512 -> 48 -> 24 -> 1. Every weight is drawn from a seeded generator.
"""
from __future__ import annotations

import json
from pathlib import Path

from ._tiny_clip import openai_state_dict, synthetic_images, write_tokenizer_files

HIDDEN = 32
LAYERS = 2
#: RoBERTa positions: 2 are the padding offset, so texts of up to 62 tokens fit.
MAX_POSITIONS = 64
EMBED = 512


def _roberta_dir(folder: Path, seed: int) -> Path:
    """A byte-level BPE RoBERTa with no merges (one token per byte) and random weights."""
    import torch
    from transformers import RobertaConfig, RobertaModel

    from capeval.metrics._clip_bpe import byte_to_unicode

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["<s>", "<pad>", "</s>", "<unk>", *byte_to_unicode().values(), "<mask>"]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "RobertaTokenizer",
                                                              "model_max_length": MAX_POSITIONS - 2}))
    cfg = RobertaConfig(vocab_size=len(vocab), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=2,
                        intermediate_size=48, max_position_embeddings=MAX_POSITIONS, pad_token_id=1,
                        bos_token_id=0, eos_token_id=2, type_vocab_size=1)
    torch.manual_seed(seed)
    model = RobertaModel(cfg).eval()
    with torch.no_grad():  # spread the weights so that texts (and their first token) differ
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.2)
            else:  # layer norms too: with unit gains and zero biases every hidden state has mean 0
                p.add_(torch.randn(p.shape) * 0.3)  # and variance 1, and the scalar mix's norm does nothing
    model.save_pretrained(str(folder))
    return folder


def _clip_state_dict(folder: Path, seed: int) -> tuple[dict, Path]:
    import torch
    from transformers import CLIPConfig, CLIPModel

    import gzip

    merges_gz, vocab = write_tokenizer_files(folder / "cliptok")
    # No newline after the last merge: polos's SimpleTokenizer (OpenAI's) keeps an empty last
    # line as a merge of its own, which the real file's 49,152-line cut never reaches.
    merges_gz.write_bytes(gzip.compress(gzip.decompress(merges_gz.read_bytes()).rstrip(b"\n")))
    n = len(vocab)
    config = CLIPConfig(
        text_config=dict(vocab_size=n, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=1, max_position_embeddings=77, hidden_act="quick_gelu",
                         bos_token_id=n - 2, eos_token_id=n - 1, pad_token_id=n - 1),
        vision_config=dict(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2,
                           image_size=224, patch_size=32, hidden_act="quick_gelu"),
        projection_dim=EMBED,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.2)
    return openai_state_dict(model), merges_gz


def hparams(text_dir: Path, pool: str, final_activation: object) -> dict:
    """PolosEstimator's hyper-parameters as its released trainer config sets them
    (configs/polos-trainer.yaml), with the tiny encoder and head."""
    return {
        "model": "PolosEstimator", "encoder_model": "BERT", "pretrained_model": str(text_dir),
        "layer": "mix", "scalar_mix_dropout": 0.1, "pool": pool, "dropout": 0.1, "activations": "Tanh",
        "hidden_sizes": "48,24", "final_activation": final_activation, "loss": "mse", "batch_size": 4,
        "nr_frozen_epochs": 100000, "keep_embeddings_frozen": False, "optimizer": "Adam",
        "learning_rate": 3.0e-05, "encoder_learning_rate": 1.0e-05, "layerwise_decay": 0.95,
        "scheduler": "constant", "warmup_steps": None, "load_weights": False, "switch_prob": 0.0,
        "train_path": None, "val_path": None, "test_path": None, "train_img_dir_path": None,
        "val_img_dir_path": None, "test_img_dir_path": None, "loader_workers": 0, "monitor": "pearson",
    }


def head_state_dict(seed: int, in_dim: int, sizes=(48, 24), mixture: int = LAYERS + 1) -> dict:
    """The scalar mix (softmax weights, gamma, its dropout buffers) and the feed-forward head."""
    import torch

    g = torch.Generator().manual_seed(seed)
    sd = {f"scalar_mix.scalar_parameters.{i}": torch.randn(1, generator=g) for i in range(mixture)}
    sd["scalar_mix.gamma"] = torch.tensor([0.8]) + 0.4 * torch.rand(1, generator=g)
    sd["scalar_mix.dropout_mask"] = torch.zeros(mixture)
    sd["scalar_mix.dropout_fill"] = torch.full((mixture,), -1e20)
    dims = [in_dim, *sizes, 1]
    for i, (a, b) in enumerate(zip(dims, dims[1:]), start=1):
        sd[f"ff.0.ff.linear_{i}.weight"] = torch.randn(b, a, generator=g) * (1.5 / a ** 0.5)
        sd[f"ff.0.ff.linear_{i}.bias"] = torch.randn(b, generator=g) * 0.1
    # The 4 sentence-embedding blocks (4*HIDDEN of the inputs) weigh as much as the 6 CLIP
    # blocks, so the RoBERTa path moves the score as much as CLIP's does.
    sd["ff.0.ff.linear_1.weight"][:, :4 * HIDDEN] *= (in_dim / (4 * HIDDEN)) ** 0.5 / 2
    return sd


def build(root: Path, *, seed: int = 0, pool: str = "cls", final_activation: object = False) -> dict:
    """Write a tiny Polos checkpoint folder under ``root``; returns its paths."""
    import torch
    import yaml
    from safetensors.torch import load_file

    text_dir = _roberta_dir(root / "roberta", seed)
    clip_sd, merges = _clip_state_dict(root, seed + 1)
    enc = load_file(str(text_dir / "model.safetensors"))
    sd = {f"encoder.model.{k}": v for k, v in enc.items()}
    sd.update(head_state_dict(seed + 2, 4 * HIDDEN + 6 * EMBED))
    sd.update({f"clip.{k}": v for k, v in clip_sd.items()})
    ckpt_dir = root / "ckpt"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ckpt_dir / "model.ckpt"
    torch.save({"epoch": 0, "global_step": 0, "pytorch-lightning_version": "1.3.8",
                "state_dict": {k: v.contiguous() for k, v in sd.items()}}, ckpt)
    (ckpt_dir / "hparams.yaml").write_text(yaml.safe_dump(hparams(text_dir, pool, final_activation)))
    images = [str(p) for p in synthetic_images(root / "img", seed=seed)]
    clip_weights = root / "tinyclip.pt"  # what the reference's clip.load("ViT-B/32") loads instead
    torch.save(clip_sd, clip_weights)
    return {"root": root, "checkpoint": ckpt, "text_dir": text_dir, "merges": merges, "images": images,
            "clip_weights": clip_weights, "state_dict": sd}
