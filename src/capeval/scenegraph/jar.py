"""The original SPICE 1.0 jar (Anderson et al. 2016), run as a subprocess.

pycocoevalcap ships ``spice/spice-1.0.jar`` and its ``lib/`` (SceneGraphParser, METEOR's synonym
table...), but not Stanford CoreNLP 3.6.0 (``stanford-corenlp-3.6.0.jar`` and
``stanford-corenlp-3.6.0-models.jar``, ~385 MB, only from nlp.stanford.edu). The user points
``$CAPEVAL_CORENLP_DIR`` at a directory holding them; every jar in it joins the class path, so a
standalone JavaScript engine (``nashorn-core``) can sit there too.

Hazards handled (docs/SPICE.md, Jar backend):

* the jar's ``-cache`` (FST serialisation) fails on Java >= 16: the flag is dropped there;
* the jar writes ``-out`` through a JavaScript engine, which JDK 15+ lacks: without an engine jar
  in the CoreNLP directory such a Java is refused with an explanation;
* results come back in sorted-id order: they are keyed by ``image_id``, never by position.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import ExternalToolError, ResourceNotFound
from ..resources.resolver import java_executable, resolve

# spice-jar and corenlp-3.6.0 are registered in capeval.resources.resolver.

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
CATEGORY_KEYS = {
    "all": "All", "object": "Object", "attribute": "Attribute", "relation": "Relation",
    "count": "Cardinality", "color": "Color", "size": "Size",
}


def corenlp_dir(path: str | os.PathLike | None = None) -> Path:
    d = resolve("corenlp-3.6.0", path)
    missing = [j for j in CORENLP_JARS if not (d / j).is_file()]
    if missing:
        raise ResourceNotFound(
            f"corenlp-3.6.0: {d} lacks {', '.join(missing)}. Set CAPEVAL_CORENLP_DIR to the directory "
            "holding both CoreNLP 3.6.0 jars."
        )
    return d


def java_major(java: str) -> int:
    """Major version of ``java`` (8 for "1.8.0_x", 17 for "17.0.x")."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExternalToolError(f"could not run {java} -version: {exc}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not m:
        raise ExternalToolError(f"could not read the Java version from: {proc.stderr.strip()[:200]}")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def jar_sha256(jar: Path) -> str:
    return hashlib.sha256(jar.read_bytes()).hexdigest()[:12]


def build_command(java: str, jar: Path, corenlp: Path, in_json: Path, out_json: Path,
                  cache_dir: Path | None, java_version: int, synonyms: bool = True,
                  threads: int | None = None, heap: str = "8G") -> list[str]:
    """The SPICE command line (docs/SPICE.md, Jar backend): ``-subset -silent``, ``-cache`` only on Java < 16.

    The class path is spelled out (``-cp``) instead of ``-jar`` so the CoreNLP jars can live
    outside pycocoevalcap's installed ``lib/``.
    """
    lib = jar.parent / "lib"
    parts = [str(jar), str(lib / "*"), str(corenlp / "*")]
    cmd = [java, f"-Xmx{heap}", "-cp", os.pathsep.join(parts), "edu.anu.spice.SpiceScorer",
           str(in_json)]
    if cache_dir is not None and java_version < 16:
        cmd += ["-cache", str(cache_dir)]
    cmd += ["-out", str(out_json), "-subset", "-silent"]
    if not synonyms:
        cmd.append("-noSynsets")
    if threads:
        cmd += ["-threads", str(int(threads))]
    return cmd


def _has_js_engine(corenlp: Path) -> bool:
    return any("nashorn" in p.name.lower() or "graaljs" in p.name.lower() or p.name.startswith("js-")
               for p in corenlp.glob("*.jar"))


def parse_output(items: list[dict], ids: Sequence[str]) -> dict[str, list[float]]:
    """Per-category f for each id, keyed by ``image_id`` (the jar sorts ids)."""
    by_id = {str(it["image_id"]): it["scores"] for it in items}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ExternalToolError(f"SPICE output lacks image_id {missing[0]!r} ({len(missing)} missing)")
    out: dict[str, list[float]] = {}
    for cat, key in CATEGORY_KEYS.items():
        vals = []
        for i in ids:
            f = by_id[i].get(key, {}).get("f")
            vals.append(math.nan if f is None else float(f))
        out[cat] = vals
    return out


def run_spice_jar(candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                  jar: str | os.PathLike | None = None, corenlp: str | os.PathLike | None = None,
                  synonyms: bool = True, cache_dir: str | os.PathLike | None = None,
                  threads: int | None = None, timeout: float | None = None) -> tuple[dict, dict]:
    """Score with the original jar; returns (per-category f lists, signature fields)."""
    jar_path = resolve("spice-jar", jar)
    core = corenlp_dir(corenlp)
    java = java_executable()
    major = java_major(java)
    if major >= 15 and not _has_js_engine(core):
        raise ExternalToolError(
            f"spice-1.0.jar writes its results through a JavaScript engine, which Java {major} lacks. "
            "Run it with Java 8 or 11 (set CAPEVAL_JAVA), or put a standalone Nashorn jar "
            "(org.openjdk.nashorn:nashorn-core and its asm jars) in CAPEVAL_CORENLP_DIR."
        )
    # Zero-padded ids sort like positions, so the jar's sorted order is easy to check.
    width = len(str(len(candidates)))
    ids = [f"{k:0{width}d}" for k in range(len(candidates))]
    with tempfile.TemporaryDirectory(prefix="capeval-spice-") as tmp:
        tmpd = Path(tmp)
        in_json, out_json = tmpd / "in.json", tmpd / "out.json"
        items = [{"image_id": i, "test": c, "refs": list(r)}
                 for i, c, r in zip(ids, candidates, references)]
        in_json.write_text(json.dumps(items))
        cache = Path(cache_dir) if cache_dir is not None else None
        cmd = build_command(java, jar_path, core, in_json, out_json, cache, major, synonyms, threads)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=str(jar_path.parent))
        except subprocess.TimeoutExpired as exc:
            raise ExternalToolError(f"SPICE jar timed out after {timeout} s") from exc
        if proc.returncode != 0 or not out_json.is_file():
            raise ExternalToolError(
                f"SPICE jar failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}"
            )
        result = parse_output(json.loads(out_json.read_text()), ids)
    fields = {"impl": "spice-1.0.jar", "jar": jar_sha256(jar_path), "corenlp": "3.6.0",
              "subset": True, "syn": synonyms, "java": major}
    return result, fields
