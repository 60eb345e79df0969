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


def build_llava(folder: Path, seed: int = 0) -> Path:
    """A LLaVA-style image-text model: a tiny CLIP vision tower (16x16 images, 8x8 patches: four
    image tokens) before a tiny Llama, with its processor."""
    import torch
    import transformers

    tok = tokenizer(image_token=True)
    image_id = tok.convert_tokens_to_ids("<image>")
    vision = transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, image_size=16, patch_size=8, projection_dim=16)
    text = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, bos_token_id=1, eos_token_id=2,
                                    pad_token_id=3)
    cfg = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_id,
                                   vision_feature_layer=-1, vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = transformers.LlavaForConditionalGeneration(cfg).eval()
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(20.0)
        model.get_output_embeddings().weight[2].zero_()  # </s> at logit 0: answers of one and two decimals
    images = transformers.CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    proc = transformers.LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=8,
                                       vision_feature_select_strategy="default", num_additional_image_tokens=1)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder
