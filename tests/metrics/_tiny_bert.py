"""A tiny random BERT with a 16-token window, saved as a model directory the encoder families load
(``model=<dir>``), so texts just under, at and over the window cost milliseconds."""
from __future__ import annotations

from pathlib import Path

WORDS = ("a dog runs on the grass two cats sleep in sunny room man rides red bike down street "
         "photo depicts children play ball near water and with big small green blue").split()
WINDOW = 16


def build(folder: Path, window: int = WINDOW, seed: int = 0) -> Path:
    """Save the model and a word-level WordPiece tokenizer (one token per word) to ``folder``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", *WORDS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), model_max_length=window)
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=window)
    BertModel(cfg).eval().save_pretrained(str(folder))
    return folder


def words(n: int, start: int = 0) -> str:
    """``n`` words of the vocabulary (one token each), cycling from ``start``."""
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(n))
