"""The coco suite in one call (issue 26, item 3): ``capeval score -m coco`` against pycocoevalcap.

Both sides score one COCO Karpathy-test system (Tanti et al.'s merge_1: 5,000 rows x 5
references) in their own fresh process, timed from process start to the written scores:

  capeval         ``capeval score -i rows.jsonl -m coco -o out.json -q``: BLEU-1..4, METEOR
                  (native backend), ROUGE-L, CIDEr-D, with the pure-Python PTB tokenizer. METEOR's
                  converted resources are already in $CAPEVAL_CACHE (an untimed run first makes
                  sure of it), and the process runs with every directory holding a ``java``
                  executable removed from PATH and JAVA_HOME unset: it must not need Java.
  pycocoevalcap   a python process running its PTBTokenizer, Bleu(4), Meteor, Rouge and Cider on
                  the same rows (Java for the tokenizer and METEOR).

Per-caption and corpus values of every metric are compared with ``==``. Reported per side:
wall and CPU seconds (children included: the reference's JVMs), the load average before and
after; sides alternate ``--repeat`` times and the median is the figure. Target: >= 20x.

    python benchmarks/bench_coco_suite.py [--repeat 3] [--rows N]

Writes benchmarks/results/coco_suite.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM = "merge_1"
METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l", "cider_d"]

_REF_SCRIPT = r"""
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
gts = {i: [{"caption": x} for x in r["references"]] for i, r in enumerate(rows)}
res = {i: [{"caption": r["candidate"]}] for i, r in enumerate(rows)}
tok = PTBTokenizer()
g, r = tok.tokenize(gts), tok.tokenize(res)
b, bs = Bleu(4).compute_score(g, r, verbose=0)
m, ms = Meteor().compute_score(g, r)
rl, rls = Rouge().compute_score(g, r)
c, cs = Cider().compute_score(g, r)
per = {f"bleu{k + 1}": list(map(float, bs[k])) for k in range(4)}
per.update(meteor=list(map(float, ms)), rouge_l=list(map(float, rls)), cider_d=list(map(float, cs)))
corpus = {f"bleu{k + 1}": float(b[k]) for k in range(4)}
corpus.update(meteor=float(m), rouge_l=float(rl), cider_d=float(c))
json.dump({"per_caption": per, "corpus": corpus}, open(sys.argv[2], "w"))
"""


def _cpu_children() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def _timed(cmd: list[str], env: dict) -> dict:
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu_children()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return {"wall": time.perf_counter() - t0, "cpu": _cpu_children() - c0,
            "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2)}


def _env_without_java() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "CAPEVAL_PURE_PYTHON")}
    keep = [d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "java").exists()]
    env["PATH"] = os.pathsep.join(keep)
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=None, help="first N rows only (a quick check)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "coco_suite.json")
    a = ap.parse_args(argv)
    import capeval.data

    t = capeval.data.load("tanti-coco")
    cands, refs = list(t.systems[SYSTEM]), [list(r) for r in t.references]
    if a.rows:
        cands, refs = cands[:a.rows], refs[:a.rows]
    tmp = Path(tempfile.mkdtemp(prefix="bench-coco-suite-"))
    rows = tmp / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i, "candidate": c, "references": r}) + "\n"
                            for i, (c, r) in enumerate(zip(cands, refs))), encoding="utf-8")
    capeval_cmd = [sys.executable, "-c", "from capeval.cli.main import main; main()", "score", "-i", str(rows),
                   "-m", "coco", "-q", "--overwrite"]
    no_java = _env_without_java()
    ref_env = {k: v for k, v in os.environ.items() if k != "CAPEVAL_PURE_PYTHON"}
    # Untimed: converts METEOR's resources if this cache has not yet (the target is the warm case).
    subprocess.run(capeval_cmd + ["-o", str(tmp / "warmup.json")], check=True, env=no_java,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    load_start = os.getloadavg()
    ours, ref = [], []
    for i in range(a.repeat):
        ref.append(_timed([sys.executable, "-c", _REF_SCRIPT, str(rows), str(tmp / "ref.json")], ref_env))
        ours.append(_timed(capeval_cmd + ["-o", str(tmp / f"ours{i}.json")], no_java))
        print(json.dumps({"ours": ours[-1], "pycocoevalcap": ref[-1]}), flush=True)
    got = json.loads((tmp / f"ours{a.repeat - 1}.json").read_text())
    want = json.loads((tmp / "ref.json").read_text())
    med = {"capeval": statistics.median(x["wall"] for x in ours),
           "pycocoevalcap": statistics.median(x["wall"] for x in ref)}
    med_cpu = {"capeval": statistics.median(x["cpu"] for x in ours),
               "pycocoevalcap": statistics.median(x["cpu"] for x in ref)}
    report = {
        "benchmark": "capeval score -m coco vs pycocoevalcap (PTBTokenizer, Bleu, Meteor, Rouge, Cider), "
                     "fresh processes, METEOR resources converted",
        "system": f"tanti-coco {SYSTEM}", "rows": len(cands), "target_ratio": 20,
        "median_wall_s": med, "median_cpu_s": med_cpu,
        "ratio_wall": med["pycocoevalcap"] / med["capeval"], "ratio_cpu": med_cpu["pycocoevalcap"] / med_cpu["capeval"],
        "runs": {"capeval": ours, "pycocoevalcap": ref},
        "per_caption_identical": {m: got["per_caption"][m] == want["per_caption"][m] for m in METRICS},
        "corpus_identical": {m: got["corpus"][m] == want["corpus"][m] for m in METRICS},
        "capeval_signatures": got.get("signatures"),
        "capeval_without_java": "PATH had no java and JAVA_HOME was unset for every capeval run",
        "load_average_at_start": load_start, "load_average_at_end": os.getloadavg(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": "python benchmarks/bench_coco_suite.py" + (f" --repeat {a.repeat}" if a.repeat != 3 else "")
                   + (f" --rows {a.rows}" if a.rows else ""),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("ratio_wall", "ratio_cpu", "per_caption_identical", "corpus_identical")}))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
