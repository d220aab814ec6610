"""Schedules benchmark: one hand-written schedule per PolyBench kernel, proved, built and raced.

For each kernel: the schedule from `schedules_table.py`, its verdict, speedup over
the native baseline (interleaved runs after a warm-up, medians, candidate spread),
the legality check's median time once the kernel's dependences are cached, and the
candidate's cold build time. Sizes are LARGE, or MEDIUM where a LARGE baseline
run takes over a second here (see `MEDIUM_ONLY`). Prints a table and writes it to
benchmarks/results/schedules.md. Run: `.venv/bin/python benchmarks/schedules.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from schedules_table import SCHEDULES

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import written_arrays
from repoos_agent.legality import dependences, prove_legal
from repoos_agent.measure.isolated import RaceRules, shared_worker
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target

RESULTS = Path(__file__).parent / "results" / "schedules.md"
MEDIUM_ONLY = {"floyd-warshall", "seidel-2d", "adi", "nussinov", "lu", "ludcmp", "3mm", "gramschmidt", "correlation", "covariance"}
"""Kernels whose LARGE baseline takes over a second per run here (benchmarks/results/foundation.md)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="all")
    parser.add_argument("--size", help="force one size for every kernel")
    args = parser.parse_args()
    os.environ["REPOOS_CACHE_DIR"] = tempfile.mkdtemp(prefix="repoos-bench-cache-")
    chosen = [k for k in bundled_kernels() if args.kernels == "all" or k.name in args.kernels.split(",")]
    header = "| kernel | size | schedule | verdict | speedup | spread | legality ms | build ms | baseline s | candidate s |"
    lines = [header, "|---" * 10 + "|"]
    print(header, flush=True)
    legality_times, build_times, speedups = [], [], {}
    for bundled in chosen:
        target = resolve_target(bundled.name)
        size = args.size or ("MEDIUM" if bundled.name in MEDIUM_ONLY else "LARGE")
        schedule = SCHEDULES[bundled.name]
        dependences(target.kernel)
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            verdict = prove_legal(target.kernel, schedule)
            samples.append((time.perf_counter() - start) * 1000)
        legality_ms = statistics.median(samples)
        legality_times.append(legality_ms)
        row = [bundled.name, size, f"`{verdict.schedule}`", verdict.verdict]
        if not verdict.legal:
            row += ["", "", f"{legality_ms:.1f}", "", "", ""]
        else:
            values = target.inputs(size)
            signature = Signature.of_values(target.kernel, values)
            baseline = build_baseline(target.kernel, signature)
            start = time.perf_counter()
            candidate = build_native(target.kernel, signature, verdict.lowered)
            build_ms = (time.perf_counter() - start) * 1000
            build_times.append(build_ms)
            rules = RaceRules(tuple(written_arrays(target)), min_repeats=5, min_total_s=1.0)
            result = shared_worker().race(baseline, candidate, values, rules, timeout_s=600)
            if result.outcome != "ok":
                row[3] = result.outcome
                row += ["", "", f"{legality_ms:.1f}", f"{build_ms:.0f}", "", ""]
            else:
                speedups[bundled.name] = result.speedup
                row += [
                    f"{result.speedup:.2f}x",
                    f"±{result.candidate.spread:.0%}",
                    f"{legality_ms:.1f}",
                    f"{build_ms:.0f}",
                    f"{result.baseline.median_s:.4f}",
                    f"{result.candidate.median_s:.4f}",
                ]
        line = "| " + " | ".join(row) + " |"
        lines.append(line)
        print(line, flush=True)
    summary = [
        f"legality verdict: median {statistics.median(legality_times):.1f} ms, "
        f"max {max(legality_times):.1f} ms (target median < 20 ms)",
        f"candidate build: median {statistics.median(build_times):.0f} ms, max {max(build_times):.0f} ms (target < 1000 ms)",
    ]
    if speedups:
        summary.append(f"speedup: geomean {statistics.geometric_mean(speedups.values()):.2f}x over {len(speedups)} kernels")
    if "gemm" in speedups:
        summary.append(f"gemm: {speedups['gemm']:.2f}x over the native baseline (target 5x)")
    text = "\n".join(summary)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
    RESULTS.write_text(f"# Schedules benchmark\n\nMeasured on {machine}.\n\n" + "\n".join(lines) + "\n\n" + text + "\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
