"""The three "walks" of issue 44: files and hops a reader follows through ``src/capeval``.

A walk runs one command in this process under ``sys.setprofile`` and records every call from
a function in one file of the package to a function in another. Calls made while a module is
being imported (any ``<module>`` frame on the stack) are left out, so the walk is what the
command does, not what loading the package does. ``files``: distinct package files on either
end of a hop; ``hops``: distinct (caller file, callee file) pairs; ``function_hops``: distinct
(caller function, callee function) pairs whose files differ. Worker processes of
``--jobs 2`` are not traced: the walk is the parent's (chunks sent out, results merged).

    CAPEVAL_DATA=/work/shared/data python scripts/walks.py [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path


class Walk:
    def __init__(self, root: str):
        self.root = root
        self.pairs: set[tuple[str, str]] = set()
        self.calls: set[tuple[str, str]] = set()
        self.importing = 0

    def __call__(self, frame, event, arg) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_name == "<module>":
                self.importing += 1
                return
            if self.importing:
                return
            callee = code.co_filename
            back = frame.f_back
            if back is None or not callee.startswith(self.root):
                return
            caller = back.f_code.co_filename
            if caller != callee and caller.startswith(self.root):
                a, b = caller[len(self.root):], callee[len(self.root):]
                self.pairs.add((a, b))
                self.calls.add((f"{a}:{back.f_code.co_qualname}", f"{b}:{code.co_qualname}"))
        elif event == "return" and frame.f_code.co_name == "<module>":
            self.importing -= 1

    def summary(self) -> dict:
        files = {f for p in self.pairs for f in p}
        return {"files": len(files), "hops": len(self.pairs), "function_hops": len(self.calls),
                "pairs": sorted(map(list, self.pairs)), "calls": sorted(map(list, self.calls))}


def traced(root: str, fn) -> dict:
    walk = Walk(root)
    sys.setprofile(walk)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return walk.summary()


def cli(args: list[str]) -> None:
    import typer

    from capeval.cli.main import app

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = typer.main.get_command(app).main(args, standalone_mode=False)
        except SystemExit as e:
            code = e.code
    if code not in (0, None):
        raise RuntimeError(f"capeval {' '.join(args)} exited {code}: {err.getvalue()[-500:]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ.setdefault("CAPEVAL_DATA", "/work/shared/data")
    import capeval

    root = str(Path(capeval.__file__).parent) + os.sep
    cands = ["a man rides a red moped on a dirt road", "two dogs play in the snow", "a cat on a sofa"]
    refs = [["a man riding a motor bike on a dirt road", "a man on a moped"],
            ["dogs playing in snow", "two dogs run in the snow"], ["a cat lying on a couch", "a cat on a sofa"]]
    out = {"capeval.score -> cider_d": traced(root, lambda: capeval.score(cands, refs, ["cider_d"]))}
    with tempfile.TemporaryDirectory() as d:
        units, scores = Path(d) / "units.jsonl", Path(d) / "len.jsonl"
        cli(["data", "export", "flickr8k-expert", "-o", str(units)])
        with units.open(encoding="utf-8") as f, scores.open("w", encoding="utf-8") as g:
            for line in f:
                u = json.loads(line)
                g.write(json.dumps({"id": u["id"], "score": len(u["candidate"])}) + "\n")
        bench = ["bench", "flickr8k-expert", "-m", "bleu4", "--scores", f"len={scores}", "--no-cache"]
        out["bench flickr8k-expert -m bleu4 --scores -> tau"] = traced(root, lambda: cli(bench))
        rows = Path(d) / "rows.jsonl"
        with rows.open("w", encoding="utf-8") as g:
            for i in range(400):
                g.write(json.dumps({"id": i, "candidate": cands[i % 3], "references": refs[(i + 1) % 3]}) + "\n")
        stream = ["score", "--input", str(rows), "-m", "bleu4", "--jobs", "2", "--chunk-size", "100",
                  "-o", str(Path(d) / "out.jsonl")]
        out["score --jobs 2, bleu chunks -> corpus"] = traced(root, lambda: cli(stream))
    for k, v in out.items():
        print(f"{k}: {v['files']} files / {v['hops']} hops / {v['function_hops']} function hops")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
