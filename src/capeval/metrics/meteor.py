"""METEOR 1.5 as coco's modified jar computes it: natively in Python, or by driving the jar.

Two backends give the same numbers (``-O meteor.backend=native|jar``; the signature names
the one used):

* ``native`` (:mod:`capeval.metrics._meteor_native`): the jar's normaliser, stemmer,
  synonym and paraphrase matchers, beam-search aligner and scoring reimplemented in
  Python, reading the jar's resources (no Java needed). Equal to the jar, per caption and
  corpus, on every benchmark candidate set (tests/metrics/test_meteor_native.py,
  benchmarks/meteor_native_agreement.py).
* ``jar``: the JVM, driven as below.

The rest of this docstring describes the jar backend.

Denkowski & Lavie (2014), "Meteor Universal: Language Specific Translation Evaluation for
Any Target Language". Protocol (docs/METRICS.md, METEOR 1.5): per unit, clean the hypothesis (delete
``|||``, then one left-to-right pass turning double spaces into single ones), send
``SCORE ||| ref_1 ||| ... ||| ref_K ||| hyp`` and read a statistics line; then
``EVAL ||| stats_1 ||| ... ||| stats_N`` returns one score per statistics line and, last,
the corpus score: the jar's score of the N statistics aggregated by its own rules (not the
mean of unit scores).

Why it is faster than the reference wrapper while giving identical numbers:

* A statistics line is a pure function of its SCORE line, so each distinct line is sent
  once and its answer reused for every row that repeats it (Flickr8k-Expert: 16,992 rows,
  5,664 distinct units).
* SCORE lines go out in batches (write all, then read all) instead of one round trip each,
  spread over up to ``workers`` JVMs.
* One EVAL in one JVM gives the per-unit scores (one line per distinct unit) and the
  jar's own aggregate. The aggregate needs every row's statistics, but not one line per
  row: the jar's ``MeteorStats.addStats`` sums fields (all integer-valued doubles, so the
  order of addition cannot change the result) except that it skips the chunk count of a
  perfect match with exactly one chunk (a rule of coco's modified jar, read in its
  bytecode). So the extra copies of repeated units are folded into one remainder line whose
  fields are their sums and whose chunk count is what the jar would have added for them
  (:func:`fold_remainders`); the jar then aggregates it with its own code. Tests check the
  result is identical (==) to pycocoevalcap's one-line-per-row EVAL.
"""
from __future__ import annotations

import hashlib
import os
import queue
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..errors import ExternalToolError, InputError, ResourceNotFound
from ..extras import missing_extras
from ..resources.resolver import java_executable, resolve
from ..result import MetricScores
from ._limits import METEOR_MAX_WORDS, check_lengths
from ._meteor_jvm import JVMCrashed, MeteorProcess, default_workers
from ._meteor_native import NativeMeteor, powtable
from ._meteor_native.score import corpus_score as native_corpus_score
from ._meteor_native.score import scores as native_scores
from ._meteor_native.score import add_stats
from .base import Metric, OutputInfo
from .statistics import Aggregate, Statistics
from .registry import register

#: What the jar prints as "Eval ID" for ``-l en -norm`` with default parameters. Verified by
#: running the jar in non-stdio mode in tests/metrics/test_meteor.py.
EVAL_ID = "meteor-1.5-wo-en-norm-0.85_0.2_0.6_0.75-ex_st_sy_pa-1.0_0.6_0.8_0.6"
VARIANT = "meteor_1.5_coco"
SEP = " ||| "
#: A second JVM costs ~10 s of CPU (paraphrase table, JIT warm-up) and saves ~1.7 ms per
#: distinct unit it takes over; below this many units per JVM it is not worth starting.
MIN_UNITS_PER_EXTRA_WORKER = 2000
BACKENDS = ("native", "jar")
#: native equals the jar on every benchmark candidate set (benchmarks/results/meteor_native_agreement.json).
DEFAULT_BACKEND = "native"

_sha_cache: dict[tuple[str, int, int], str] = {}


def jar_sha256(jar: Path) -> str:
    st = jar.stat()
    key = (str(jar.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _sha_cache:
        _sha_cache[key] = hashlib.sha256(jar.read_bytes()).hexdigest()
    return _sha_cache[key]


def clean_hypothesis(hyp: str) -> str:
    # str.replace is one left-to-right pass, so "   " becomes "  ", exactly as the wrapper.
    return hyp.replace("|||", "").replace("  ", " ")


def check_references(index: int, refs: Sequence[str]) -> None:
    """Refuse references containing the jar's field separator (its protocol would split them;
    the native backend refuses them too, so both backends accept the same input)."""
    for k, ref in enumerate(refs):
        if "|||" in ref:
            raise InputError(
                f"reference {k} of item {index} contains '|||', METEOR's field separator: "
                f"{ref[:60]!r}. Remove it before scoring METEOR."
            )


def score_line(index: int, hyp: str, refs: Sequence[str]) -> str:
    """The SCORE request for one unit; refuses references that would break the protocol."""
    check_references(index, refs)
    return SEP.join(("SCORE", SEP.join(refs), clean_hypothesis(hyp)))


def stats_line(row) -> str:
    """A statistics row as the jar prints it (``Double.toString`` of integer counts)."""
    return " ".join(f"{int(x)}.0" for x in row)


def _parse_float(line: str, what: str, proc: MeteorProcess) -> float:
    try:
        return float(line)
    except ValueError:
        raise ExternalToolError(
            f"METEOR returned {line!r} for {what}, not a number. stderr:\n{proc.stderr_tail()}"
        ) from None


def _check_stats(line: str, what: str, proc: MeteorProcess) -> str:
    parts = line.split()
    if not parts:
        raise ExternalToolError(f"METEOR returned an empty statistics line for {what}. stderr:\n{proc.stderr_tail()}")
    for p in parts:
        _parse_float(p, what, proc)
    return line


def _is_perfect_single_chunk(f: list[float]) -> bool:
    """The jar's ``addStats`` condition for skipping chunks: all test and reference words
    matched (totals = sums of the per-stage content + function matches) and one chunk."""
    n_stages = (len(f) - 7) // 4
    blocks = f[4 : 4 + 4 * n_stages]
    test_total = sum(blocks[0::4]) + sum(blocks[2::4])
    ref_total = sum(blocks[1::4]) + sum(blocks[3::4])
    return test_total == f[0] and ref_total == f[1] and f[4 + 4 * n_stages] == 1.0


def _foldable(f: list[float]) -> bool:
    return len(f) >= 7 and (len(f) - 7) % 4 == 0 and all(x == int(x) and x >= 0 for x in f)


def fold_remainders(stats: Sequence[str], counts: Sequence[int]) -> list[str]:
    """One statistics line equal, for the jar's aggregate, to ``counts[i] - 1`` further copies
    of each ``stats[i]`` (empty list when nothing repeats).

    Fields are integer counts, so sums are exact; the chunk field carries the chunks the jar
    would add for those copies (none for a perfect single-chunk match). The folded line can
    never itself trigger the skip rule: its chunk count is 1 only when it holds exactly one
    non-perfect copy, and a sum containing a non-perfect line is not perfect.

    Lines of an unexpected layout (another jar) are not folded: every extra copy is sent
    as it is, which is always correct, only slower.
    """
    total: list[float] | None = None
    chunk_idx = None
    chunks = 0.0
    verbatim: list[str] = []
    for line, m in zip(stats, counts):
        if m <= 1:
            continue
        try:
            f = [float(x) for x in line.split()]
        except ValueError:
            f = []
        if not _foldable(f) or (total is not None and len(f) != len(total)):
            verbatim.extend([line] * (m - 1))
            continue
        if total is None:
            total = [0.0] * len(f)
            chunk_idx = 4 + 4 * ((len(f) - 7) // 4)
        k = m - 1
        for j, x in enumerate(f):
            total[j] += k * x
        if not _is_perfect_single_chunk(f):
            chunks += k * f[chunk_idx]
    if total is None:
        return verbatim
    total[chunk_idx] = chunks
    return verbatim + [" ".join(repr(x) for x in total)]


def eval_line(stats: Sequence[str]) -> str:
    return "EVAL" + "".join(SEP + st for st in stats)


class MeteorNativeAggregate(Aggregate):
    """Native backend. Per row: the jar's 23 statistics (integer counts). Corpus: the jar's
    aggregate (``addStats``: the counts summed, chunks only of the rows that are not a perfect
    single-chunk match), which reduces to one summed row: exact in any grouping."""

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {"meteor": native_scores(st.rows["stats"])}

    def _summed(self, st: Statistics) -> np.ndarray:
        parts = [st.totals["aggregate"]] if "aggregate" in st.totals else []
        if "stats" in st.rows and len(st.rows["stats"]):
            parts.append(add_stats(st.rows["stats"]))
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]

    def corpus(self, st: Statistics) -> dict[str, float]:
        return {"meteor": float(native_scores(self._summed(st)[None, :])[0])}

    def reduce(self, st: Statistics) -> Statistics:
        return Statistics(st.n, self, {}, {"aggregate": self._summed(st)}, dict(st.fields))


class MeteorJarAggregate(Aggregate):
    """Jar backend. Per row: the jar's statistics line and its score. Corpus: one EVAL of the
    distinct lines (their repeats folded, as :meth:`Meteor.compute` sends them) in a JVM: the
    scoring instance's own while it is open (``live``, never pickled), else one started with
    ``options``."""

    def __init__(self, options: dict, live: Meteor | None = None):
        self.options = dict(options)
        self._live = live

    def __getstate__(self) -> dict:
        return {"options": self.options, "_live": None}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.options == self.options  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(type(self))

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {"meteor": st.rows["meteor"]}

    def corpus(self, st: Statistics) -> dict[str, float]:
        index: dict[str, int] = {}
        row_unit = [index.setdefault(line, len(index)) for line in st.rows["lines"].tolist()]
        distinct = list(index)
        counts = np.bincount(np.asarray(row_unit, dtype=np.int64), minlength=len(distinct)).tolist()
        lines = distinct + fold_remainders(distinct, counts)
        if self._live is not None and self._live._procs:
            return {"meteor": self._live.evaluate(lines)[1]}
        with Meteor(backend="jar", **self.options) as m:
            return {"meteor": m.evaluate(lines)[1]}


@register
class Meteor(Metric):
    """METEOR 1.5 as computed by pycocoevalcap (coco's jar, ``-l en -norm``).

    Parameters
    ----------
    backend : {"native", "jar"}
        ``native``: pure Python, reads the jar's resource files but needs no Java; the first
        use converts them into a cache (``$CAPEVAL_CACHE/meteor-1.5``). ``jar``: the JVM.
        Same numbers either way. The options below except ``jar`` apply to the JVM only.
    workers : int, optional
        JVMs scoring distinct units in parallel. Default: 2 on machines with at least 4 cores
        whose load average is below half the core count, else 1 (see
        :func:`capeval.metrics._meteor_jvm.default_workers`). Each loads the paraphrase table
        (≈1.4 GB resident). A second JVM is only started for at least 2,000 distinct units per
        JVM. Results do not depend on it.
    timeout : float
        Seconds to wait for any single answer line of a running JVM.
    startup_timeout : float
        Seconds to wait for a fresh JVM's first answer (includes loading its data).
    batch_size : int
        SCORE lines written per batch; a crashed JVM is restarted once and the batch retried.
    jar, java : str, optional
        Paths overriding ``$CAPEVAL_METEOR_JAR`` / pycocoevalcap's jar and ``$CAPEVAL_JAVA`` / PATH.
    max_heap : str
        The JVM's ``-Xmx`` (the wrapper uses 2G).
    """

    family = "meteor"
    # pycocoevalcap (a base dependency; the extra restores it) ships the jar and its data
    extras = ("coco",)
    cache_resources = ("meteor-jar",)  # both backends read the jar's data (native: converted)
    variant = VARIANT
    outputs = (
        OutputInfo(
            "meteor", "meteor", VARIANT, (0.0, 1.0), True,
            "METEOR 1.5 (coco jar, -l en -norm); corpus = the jar's aggregate over summed statistics",
            "Denkowski & Lavie, WMT 2014",
        ),
    )
    text_input = "tokenized"

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """The native backend's numbers come from the converted cache: its checksum manifest
        (checked, or converted again, on loading) names it, so scores computed from another
        conversion are never served from the score cache; nor scores computed with another
        ``Math.pow`` table (another JVM's, or the shipped one)."""
        if (options.get("backend") or DEFAULT_BACKEND) != "native":
            return None
        from ._meteor_native.resources import load

        return f"meteor-native:{load(options.get('jar')).identity['conversion'][:16]}:pow-{powtable.active().label}"

    @classmethod
    def missing_resources(cls, options: dict) -> str | None:
        """The jar and its paraphrase table (both backends read them; native needs no Java).
        Without pycocoevalcap the missing extra says it all (:func:`capeval.extras.require`)."""
        if options.get("jar") is None and missing_extras(cls.extras):
            return None
        try:
            jar = resolve("meteor-jar", options.get("jar"))
        except ResourceNotFound as e:
            return str(e)
        table = jar.parent / "data" / "paraphrase-en.gz"
        return None if table.is_file() else f"METEOR's paraphrase table is missing: expected {table} beside the jar"

    def __init__(
        self,
        backend: str = DEFAULT_BACKEND,
        workers: int | None = None,
        timeout: float = 120.0,
        startup_timeout: float = 600.0,
        batch_size: int = 500,
        jar: str | None = None,
        java: str | None = None,
        max_heap: str = "2G",
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = backend
        self.workers = default_workers() if workers is None else int(workers)
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for what, seconds in (("timeout", timeout), ("startup_timeout", startup_timeout)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
                raise ValueError(f"{what} must be a positive, finite number of seconds, got {seconds!r}")
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.batch_size = batch_size
        self.max_heap = max_heap
        self._jar_arg = jar
        self._java_arg = java
        self._jar: Path | None = None
        self._java: str | None = None
        self._procs: list[MeteorProcess] = []
        self._native: NativeMeteor | None = None

    # -- resources -----------------------------------------------------------------------
    def _resolve(self) -> tuple[str, Path]:
        if self._jar is None:
            jar = resolve("meteor-jar", self._jar_arg)
            if not (jar.parent / "data" / "paraphrase-en.gz").is_file():
                raise ResourceNotFound(
                    f"METEOR's paraphrase table is missing: expected {jar.parent / 'data' / 'paraphrase-en.gz'} "
                    "beside the jar (pycocoevalcap ships it)."
                )
            self._jar = jar
        if self._java is None:
            java = self._java_arg or java_executable()
            if not (Path(java).is_file() and os.access(java, os.X_OK)):
                found = shutil.which(java)
                if found is None:
                    raise ResourceNotFound(
                        f"Java executable {java!r} not found or not executable; install a JRE >= 8 "
                        "or set CAPEVAL_JAVA."
                    )
                java = found
            self._java = java
        return self._java, self._jar

    def _processes(self, n: int) -> list[MeteorProcess]:
        java, jar = self._resolve()
        while len(self._procs) < n:
            self._procs.append(
                MeteorProcess(java, jar, max_heap=self.max_heap, timeout=self.timeout,
                              startup_timeout=self.startup_timeout)
            )
        procs = self._procs[:n]
        for p in procs:  # start all before talking to any, so their loading overlaps
            p.start()
        return procs

    # -- protocol ------------------------------------------------------------------------
    @staticmethod
    def _check_resources_loaded(proc: MeteorProcess) -> None:
        # The jar catches resource errors and carries on without the module: with a damaged
        # paraphrase table it answers quickly with no paraphrase matches (seen with a
        # non-gzip file: only a Java stack trace on stderr). Refuse rather than score wrong.
        if any("Exception" in line for line in list(proc._stderr)):
            raise ExternalToolError(
                "the METEOR jar reported an exception while loading its resources (is "
                "data/paraphrase-en.gz beside the jar intact?); its scores would silently lack "
                f"matches. stderr:\n{proc.stderr_tail()}"
            )

    def _exchange(self, proc: MeteorProcess, lines: list[str], n_answers: int) -> list[str]:
        try:
            answers = proc.exchange(lines, n_answers)
            self._check_resources_loaded(proc)
            return answers
        except JVMCrashed as first:
            proc.close()
            try:
                return proc.exchange(lines, n_answers)
            except JVMCrashed as second:
                raise ExternalToolError(
                    f"METEOR crashed twice on the same batch.\nfirst: {first}\nsecond: {second}"
                ) from second

    def _score_batches(self, proc: MeteorProcess, batches: "queue.SimpleQueue", out: dict,
                       failed: threading.Event | None = None) -> None:
        # Workers pull batches from one queue, so a JVM that starts or runs slower (a busy
        # machine) simply takes fewer batches. Once one worker fails, the others stop taking
        # batches, so the error surfaces after at most one batch's wait.
        while failed is None or not failed.is_set():
            try:
                start, lines = batches.get_nowait()
            except queue.Empty:
                return
            try:
                answers = self._exchange(proc, lines, len(lines))
            except BaseException:
                if failed is not None:
                    failed.set()
                raise
            for i, (line, a) in enumerate(zip(lines, answers)):
                out[line] = _check_stats(a, f"SCORE line {start + i}", proc)

    def score_units(self, lines: Sequence[str]) -> dict[str, str]:
        """{SCORE line: statistics line} for distinct lines, over up to ``workers`` JVMs."""
        n_workers = max(1, min(self.workers, len(lines) // MIN_UNITS_PER_EXTRA_WORKER))
        procs = self._processes(n_workers)
        batches: queue.SimpleQueue = queue.SimpleQueue()
        for start in range(0, len(lines), self.batch_size):
            batches.put((start, list(lines[start : start + self.batch_size])))
        out: dict[str, str] = {}
        if n_workers == 1:
            self._score_batches(procs[0], batches, out)
        else:
            failed = threading.Event()
            with ThreadPoolExecutor(n_workers) as pool:
                futures = [pool.submit(self._score_batches, p, batches, out, failed) for p in procs]
                for f in futures:
                    f.result()
        return out

    def evaluate(self, stats: Sequence[str]) -> tuple[np.ndarray, float]:
        """Per-line scores and the aggregate of one EVAL over ``stats`` (statistics lines as
        ``compute`` returns them in ``details["stats"]``): natively, or in one JVM."""
        if self.backend == "native":
            rows = []
            for i, line in enumerate(stats):
                try:
                    row = [float(x) for x in line.split()]
                except ValueError:
                    row = []
                if len(row) != 23:
                    raise InputError(f"METEOR statistics line {i} is not 23 numbers: {line[:80]!r}")
                rows.append(row)
            if not rows:
                raise InputError("no METEOR statistics to evaluate")
            arr = np.asarray(rows, dtype=np.float64)
            return native_scores(arr), native_corpus_score(arr)
        proc = self._processes(1)[0]
        answers = self._exchange(proc, [eval_line(stats)], len(stats) + 1)
        per = np.array([_parse_float(a, f"EVAL answer {i}", proc) for i, a in enumerate(answers[:-1])])
        return per, _parse_float(answers[-1], "the EVAL aggregate", proc)

    def aggregate(self, outputs: tuple[str, ...]) -> Aggregate:
        if self.backend == "native":
            return MeteorNativeAggregate()
        return MeteorJarAggregate({"jar": self._jar_arg, "java": self._java_arg, "max_heap": self.max_heap,
                                   "timeout": self.timeout, "startup_timeout": self.startup_timeout}, live=self)

    def statistics(self, candidates, references, **kw) -> Statistics:
        if self.backend == "native":
            self._check_batch(candidates, references)
            st, unit_stats, row_unit = self._native_statistics(candidates, references)
            row_lines = [stats_line(row) for row in unit_stats.tolist()]
            st.details = {"distinct_units": len(unit_stats), "stats": [row_lines[u] for u in row_unit.tolist()]}
            return st
        out = self.compute(candidates, references)
        rows = {"lines": np.array(out.details["stats"], dtype=object), "meteor": out.per_caption["meteor"]}
        return Statistics(len(candidates), self.aggregate(("meteor",)), rows, {}, dict(out.signature_fields),
                          dict(out.details))

    @staticmethod
    def _check_batch(candidates, references) -> None:
        if len(candidates) != len(references):
            raise InputError(f"{len(candidates)} candidates but {len(references)} reference lists")
        if not candidates:
            raise InputError("no candidates to score")

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        if len(candidates) != len(references):
            raise InputError(f"{len(candidates)} candidates but {len(references)} reference lists")
        if not candidates:
            raise InputError("no candidates to score")
        if self.backend == "native":  # the corpus formula is MeteorNativeAggregate's (the jar's addStats)
            return self.statistics(candidates, references).scores()
        rows = [score_line(i, c, r) for i, (c, r) in enumerate(zip(candidates, references))]
        index: dict[str, int] = {}
        row_unit = np.fromiter((index.setdefault(r, len(index)) for r in rows), dtype=np.int64, count=len(rows))
        distinct = list(index)
        units = self.score_units(distinct)
        unit_stats = [units[d] for d in distinct]
        counts = np.bincount(row_unit, minlength=len(distinct)).tolist()
        per_unit, corpus = self.evaluate(unit_stats + fold_remainders(unit_stats, counts))
        per = per_unit[: len(distinct)][row_unit]
        stats = [unit_stats[u] for u in row_unit.tolist()]
        return MetricScores(
            corpus={"meteor": corpus},
            per_caption={"meteor": per},
            signature_fields={
                "eval_id": EVAL_ID,
                "jar_sha256": jar_sha256(self._jar)[:12],
                "norm": True,
                "lang": "en",
                "corpus": "jar-aggregate",
                "backend": "jar",
            },
            details={"distinct_units": len(distinct), "stats": stats},
        )

    def _native_statistics(self, candidates: Sequence[str], references: Sequence[Sequence[str]]):
        """The rows' statistics, the distinct units' and each row's unit."""
        unit_stats, row_unit, fields = self._native_units(candidates, references)
        rows = {"stats": np.asarray(unit_stats, dtype=np.float64)[row_unit]}
        return Statistics(len(candidates), MeteorNativeAggregate(), rows, {}, dict(fields)), unit_stats, row_unit

    def _native_units(self, candidates: Sequence[str], references: Sequence[Sequence[str]]):
        """Statistics of the distinct units, each row's unit, and the signature fields."""
        check_lengths("METEOR", candidates, references, METEOR_MAX_WORDS,
                      "its matching and alignment grow with the square of the length")
        # A unit is what the jar would receive: the wrapper-cleaned hypothesis and the references.
        index: dict[tuple, int] = {}
        row_unit = np.empty(len(candidates), dtype=np.int64)
        for i, (c, r) in enumerate(zip(candidates, references)):
            check_references(i, r)
            row_unit[i] = index.setdefault((clean_hypothesis(c), tuple(r)), len(index))
        if self._native is None:
            self._native = NativeMeteor(self._jar_arg)
        units = list(index)
        unit_stats = self._native.unit_stats([h for h, _ in units], [list(r) for _, r in units])
        identity = self._native.resources.identity
        fields = {
            "eval_id": EVAL_ID,
            "jar_sha256": identity["jar_sha256"][:12],
            "norm": True,
            "lang": "en",
            "corpus": "jar-aggregate",
            "backend": "native",
            # whose Math.pow the fragmentation penalty takes (docs/METRICS.md, "The last bit")
            "pow": powtable.active().label,
        }
        return unit_stats, row_unit, fields

    def close(self) -> None:
        for p in self._procs:
            p.close()
        self._procs = []
