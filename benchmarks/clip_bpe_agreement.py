"""capeval's CLIP BPE tokenizer against OpenAI's ``SimpleTokenizer`` on the real vocabulary.

OpenAI's tokenizer lives in its ``clip`` package (``clip/simple_tokenizer.py`` beside
``bpe_simple_vocab_16e6.txt.gz``; PAC-S and Polos ship copies). That package imports torchvision,
so this script loads only the tokenizer module, by path, and applies ``clip.tokenize``'s
truncation rule (77 tokens, the last kept one replaced by the end token) to its output. The texts
are every distinct candidate and reference of the benchmarks found under the data root, with the
"A photo depicts " prefix the metrics add, plus a few strings chosen to stress cleaning (HTML
entities, mojibake, accents, CJK, emoji, runs of whitespace, overlong text).

    python benchmarks/clip_bpe_agreement.py --reference DIR [--root DATA]

DIR holds ``simple_tokenizer.py`` and ``bpe_simple_vocab_16e6.txt.gz``. Writes
benchmarks/results/clip_bpe_agreement.json (or --out).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

EXTRA = [
    "fish &amp;amp; chips &lt;b&gt;", "cafÃ© crÃ¨me", "Zebra über café ß ñ", "漢字 かな 한국어", "🙂 dog 🐕🐕",
    "  lots\tof \n whitespace  ", "it's the dog's ball, isn't it? they'll've", "x2 3.14 1,000,000 #hashtag @user",
    "<|endoftext|> inside", " ".join(["a very long caption about a dog"] * 20), "",
]


def load_reference(folder: Path):
    spec = importlib.util.spec_from_file_location("openai_simple_tokenizer", folder / "simple_tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tok = module.SimpleTokenizer(str(folder / "bpe_simple_vocab_16e6.txt.gz"))
    sot, eot = tok.encoder["<|startoftext|>"], tok.encoder["<|endoftext|>"]

    def tokenize(text: str) -> list[int]:
        ids = [sot] + tok.encode(text) + [eot]
        if len(ids) > 77:
            ids = ids[:77]
            ids[-1] = eot
        return ids

    return tokenize


def benchmark_texts(root: Path | None) -> dict[str, int]:
    import capeval.data
    from capeval.data.registry import specs

    out: dict[str, int] = {}
    for spec in specs():
        try:
            table = capeval.data.load(spec.name, root)
        except Exception:  # noqa: BLE001 - a benchmark whose files are absent is skipped
            continue
        texts = [*getattr(table, "candidates", []), *getattr(table, "candidates_a", []),
                 *getattr(table, "candidates_b", [])]
        for refs in getattr(table, "references", None) or []:
            texts.extend(refs)
        for t in texts:
            out[t] = out.get(t, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--root", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "clip_bpe_agreement.json")
    args = ap.parse_args()

    from capeval.metrics._clip_bpe import ClipBPE

    vocab = args.reference / "bpe_simple_vocab_16e6.txt.gz"
    ref = load_reference(args.reference)
    ours = ClipBPE(vocab)
    counts = benchmark_texts(args.root)
    texts = ["A photo depicts " + t for t in counts] + EXTRA + ["A photo depicts " + t for t in EXTRA]
    t0 = time.perf_counter()
    mismatches = []
    truncated = 0
    for text in texts:
        a, b = ours.tokenize([text])[0], ref(text)
        truncated += len(b) == 77
        if a != b:
            mismatches.append({"text": text, "capeval": a, "openai": b})
    doc = {
        "texts": len(texts), "benchmark_texts": len(counts), "stress_texts": 2 * len(EXTRA),
        "truncated_at_77": truncated, "mismatches": len(mismatches), "first_mismatches": mismatches[:20],
        "vocab_sha256": hashlib.sha256(vocab.read_bytes()).hexdigest(),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print({k: v for k, v in doc.items() if k != "first_mismatches"})


if __name__ == "__main__":
    main()
