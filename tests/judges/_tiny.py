"""Tiny random judges built here (no judge weights exist on this machine): a Llama-style causal
LM and a LLaVA-style image-text model over a character tokenizer (every printable ASCII
character one token, so every digit is a token of its own, as in Llama's tokenizer)."""
from __future__ import annotations

import string
from pathlib import Path

CHARS = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"] + ["\n"]
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]


def tokenizer(image_token: bool = False):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + CHARS + (["<image>"] if image_token else []))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    if image_token:
        tok.add_special_tokens(["<image>"])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    kw = {"image_token": "<image>", "extra_special_tokens": {"image_token": "<image>"}} if image_token else {}
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", **kw)


def build_causal(folder: Path, seed: int = 0) -> Path:
    import torch
    import transformers

    tok = tokenizer()
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                                   bos_token_id=1, eos_token_id=2, pad_token_id=3)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # a spread of logits, so probabilities are not all alike
        model.lm_head.weight.mul_(20.0)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
