"""Generate native METEOR's table of the JVM's ``Math.pow`` values (issue 36):
``python scripts/meteor_pow_table.py [MAX_SUM]`` (needs a JDK 11+ on PATH: ``java`` runs a source
file). Writes src/capeval/metrics/_meteor_native/_jvm_pow_table.py and ``_jvm_pow_table.h``.

METEOR's fragmentation penalty is ``gamma * Math.pow(frag, beta)`` with ``frag = chunks /
((testMatches + refMatches) / 2)``; chunks and matches are word counts, so ``frag`` is the double
nearest ``2 * chunks / sum`` for integers ``1 <= chunks <= sum / 2`` (chunks never exceed either
side's matches). HotSpot on x86_64 computes ``Math.pow`` with an intrinsic (Intel's LIBM stub, in
the interpreter and the JIT alike) that is not correctly rounded, so for about 1 ``frag`` in 1,000
it is one unit in the last place away from the C library's ``pow``, which capeval calls. This
script runs ``Math.pow(frag, beta)`` in the JVM for every ``frag`` with ``sum <= MAX_SUM``
(default 2048: over 1,000 matched words a side, far beyond any caption), compares each with C's
``pow`` (Python's ``math.pow`` is the C library's), and writes the differing ones, keyed by
``frag`` itself: wherever a ``frag`` comes from (a corpus aggregate too) the table's value for it
is the JVM's. Outside the table the scorers use C's ``pow``.

The values are those of the JVM that ran this (header of the generated files): x86_64 HotSpot 17
is what pycocoevalcap's jar runs with here; another architecture's JVM (aarch64's has no such
intrinsic) may compute ``Math.pow`` differently.
"""
from __future__ import annotations

import math
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "capeval" / "metrics" / "_meteor_native"
DEFAULT_MAX_SUM = 2048

JAVA_SOURCE = """
public class MeteorPow {
    // Every frag = chunks / (sum / 2.0), 1 <= chunks <= sum / 2, sum <= max, as the jar's
    // MeteorScorer computes it, and Math.pow(frag, beta): raw bits in hex, one pair a line.
    // The first line: the JVM's version, VM name and os.arch.
    public static void main(String[] a) {
        int max = Integer.parseInt(a[0]);
        double beta = Double.longBitsToDouble(Long.parseUnsignedLong(a[1], 16));
        StringBuilder out = new StringBuilder();
        out.append(System.getProperty("java.runtime.version")).append(' ')
           .append(System.getProperty("java.vm.name").replace(' ', '_')).append(' ')
           .append(System.getProperty("os.arch")).append('\\n');
        for (int sum = 2; sum <= max; sum++) {
            for (int chunks = 1; chunks <= sum / 2; chunks++) {
                double frag = chunks / (sum / 2.0);
                out.append(Long.toHexString(Double.doubleToRawLongBits(frag))).append(' ')
                   .append(Long.toHexString(Double.doubleToRawLongBits(Math.pow(frag, beta)))).append('\\n');
            }
        }
        System.out.print(out);
    }
}
"""


def _from_bits(h: str) -> float:
    return struct.unpack(">d", int(h, 16).to_bytes(8, "big"))[0]


def _bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def jvm_table(max_sum: int, beta: float, *jvm_flags: str) -> tuple[str, dict[float, float]]:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "MeteorPow.java"
        src.write_text(JAVA_SOURCE)
        out = subprocess.run(["java", *jvm_flags, str(src), str(max_sum), _bits(beta)],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    values = {}
    for line in out[1:]:
        x, y = line.split()
        values[_from_bits(x)] = _from_bits(y)
    return out[0], values


def _cpu() -> str:
    # The intrinsic uses the CPU's approximate-reciprocal instruction, whose exact output the x86
    # specification leaves to the implementation: the CPU is part of the provenance.
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU unknown"


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from capeval.metrics._meteor_native.score import BETA

    max_sum = int(argv[0]) if argv else DEFAULT_MAX_SUM
    jvm, values = jvm_table(max_sum, BETA)
    # The interpreter and the JIT call the same stub; checked, since a difference would make the
    # values depend on how warm the jar's JVM is.
    if jvm_table(max_sum, BETA, "-Xint")[1] != values:
        raise SystemExit("Math.pow differs between the interpreter and the JIT: no single table")
    runtime, vm, arch = jvm.split()
    differ = sorted((x, y) for x, y in values.items() if y != math.pow(x, BETA))
    if any(not (0.0 < x <= 1.0) or math.isnan(y) for x, y in differ):
        raise SystemExit("unexpected frag or pow value")
    command = "python scripts/meteor_pow_table.py" + (f" {max_sum}" if argv else "")
    about = [
        f"Math.pow(frag, {BETA!r}) of {runtime} ({vm.replace('_', ' ')}, os.arch {arch}, {_cpu()}) where it differs",
        "from the C library's pow: native METEOR's fragmentation penalty uses these values (issue 36).",
        f"Domain: frag = chunks / (sum / 2.0), 1 <= chunks <= sum / 2, 2 <= sum <= {max_sum}",
        f"({len(values)} distinct frag values); {len(differ)} differ. Keyed by frag, ascending.",
        "Generated by scripts/meteor_pow_table.py (its docstring: why, and other JVMs); do not edit.",
        f"Regenerate: {command}",
    ]
    py = ['"""' + "\n".join(about) + '\n"""', "",
          f"MAX_SUM = {max_sum}", f"JAVA = {runtime!r}", f"OS_ARCH = {arch!r}", "",
          "#: frag -> the JVM's Math.pow(frag, BETA)", "JVM_POW = {"]
    py += [f"    {x!r}: {y!r}," for x, y in differ] + ["}", ""]
    (OUT / "_jvm_pow_table.py").write_text("\n".join(py))
    h = ["/* " + "\n * ".join(about) + " */", "",
         f"#define JVM_POW_MAX_SUM {max_sum}", f"#define JVM_POW_N {len(differ)}", "",
         "static const double jvm_pow_x[JVM_POW_N] = {"]
    h += [f"    {x.hex()}, /* {x!r} */" for x, _ in differ] + ["};", "",
                                                                "static const double jvm_pow_y[JVM_POW_N] = {"]
    h += [f"    {y.hex()}, /* {y!r} */" for _, y in differ] + ["};", ""]
    text = "\n".join(h)
    # float.hex writes 0x1.8p-1; C99 hexadecimal floating constants read the same
    assert re.search(r"\binf|nan\b", text) is None
    (OUT / "_jvm_pow_table.h").write_text(text)
    print(f"{len(differ)} of {len(values)} values differ ({runtime}, {arch}); wrote {OUT}/_jvm_pow_table.{{py,h}}")


if __name__ == "__main__":
    main(sys.argv[1:])
