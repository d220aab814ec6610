"""Schedules benchmark: one hand-written schedule per PolyBench kernel, proved, built and raced.

For each kernel: the schedule from `schedules_table.py`, its verdict, speedup over
the native baseline (interleaved runs after a warm-up, medians, candidate spread),
the legality check's median time once the kernel's dependences are cached, the Z3
translation validation time, and the candidate's cold build time; then the same
schedule built by the MLIR backend: its build time and its run time against the C
build's: MLIR/C = (MLIR time / baseline time) / (C time / baseline time), each
raced against the same C baseline in its own worker process. Sizes are LARGE, or MEDIUM where a LARGE baseline
run takes over a second here (see `MEDIUM_ONLY`). Prints a table and writes it to
benchmarks/results/schedules.md. Run: `.venv/bin/python benchmarks/schedules.py`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from report import chosen_kernels, write_results
from schedules_table import SCHEDULES

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.check import written_arrays
from repoos_agent.codegen.loopnest import build_loop_nest
from repoos_agent.legality import dependences, prove_legal
from repoos_agent.measure.isolated import MeasurementWorker, RaceRules, shared_worker
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target
from repoos_agent.verify import verify_loop_nest

MEDIUM_ONLY = {"floyd-warshall", "seidel-2d", "adi", "nussinov", "lu", "ludcmp", "3mm", "gramschmidt", "correlation", "covariance"}
"""Kernels whose LARGE baseline takes over a second per run here (benchmarks/results/foundation.md)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="all")
    parser.add_argument("--size", help="force one size for every kernel")
    args = parser.parse_args()
    chosen = chosen_kernels(args.kernels)
    header = (
        "| kernel | size | schedule | verdict | speedup | spread | legality ms | z3 | z3 ms | build ms | baseline s | candidate s "
        "| MLIR build ms | MLIR s | MLIR/C |"
    )
    lines = [header, "|---" * 15 + "|"]
    print(header, flush=True)
    legality_times, build_times, speedups, z3_times, mlir_ratios = [], [], {}, [], {}
    mlir_worker = MeasurementWorker()
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
        start = time.perf_counter()
        verification = verify_loop_nest(target.kernel, verdict.lowered, build_loop_nest(target.kernel, verdict.lowered))
        z3_ms = (time.perf_counter() - start) * 1000
        z3_times.append(z3_ms)
        if not verdict.legal:
            row += ["", "", f"{legality_ms:.1f}", "", "", "", "", "", "", "", ""]
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
                row += ["", "", f"{legality_ms:.1f}", verification.label, f"{z3_ms:.0f}", f"{build_ms:.0f}", "", "", "", "", ""]
            else:
                speedups[bundled.name] = result.speedup
                start = time.perf_counter()
                mlir = build_native(target.kernel, signature, verdict.lowered, backend="mlir")
                mlir_build_ms = (time.perf_counter() - start) * 1000
                # Its own worker: GCC's and LLVM's OpenMP runtimes in one process spin against each
                # other between parallel regions. The ratio is normalised by the baseline of each race.
                mlir_race = mlir_worker.race(baseline, mlir, values, rules, timeout_s=600)
                # LLVM's OpenMP threads spin for 200 ms after a region: end the process so they cannot
                # steal a core from the next kernel's C race.
                mlir_worker.close()
                mlir_cells = ["", "", mlir_race.outcome]
                if mlir_race.outcome == "ok":
                    ratio = (mlir_race.candidate.median_s / mlir_race.baseline.median_s) / (
                        result.candidate.median_s / result.baseline.median_s
                    )
                    mlir_ratios[bundled.name] = ratio
                    mlir_cells = [f"{mlir_race.candidate.median_s:.4f}", f"{ratio:.2f}"]
                row += [
                    f"{result.speedup:.2f}x",
                    f"±{result.candidate.spread:.0%}",
                    f"{legality_ms:.1f}",
                    verification.label,
                    f"{z3_ms:.0f}",
                    f"{build_ms:.0f}",
                    f"{result.baseline.median_s:.4f}",
                    f"{result.candidate.median_s:.4f}",
                    f"{mlir_build_ms:.0f}",
                    *mlir_cells[-2:],
                ]
        line = "| " + " | ".join(row) + " |"
        lines.append(line)
        print(line, flush=True)
    summary = [
        f"legality verdict: median {statistics.median(legality_times):.1f} ms, "
        f"max {max(legality_times):.1f} ms (target median < 20 ms)",
        f"candidate build: median {statistics.median(build_times):.0f} ms, max {max(build_times):.0f} ms (target < 1000 ms)",
    ]
    summary.append(
        f"z3 verification: median {statistics.median(z3_times):.0f} ms, max {max(z3_times):.0f} ms (target median < 200 ms)"
    )
    if mlir_ratios:
        within = sum(1 for r in mlir_ratios.values() if r <= 1.15)
        summary.append(
            f"MLIR/C run time: geomean {statistics.geometric_mean(mlir_ratios.values()):.2f}, "
            f"{within} of {len(mlir_ratios)} within 15% of the C build (or faster)"
        )
    if speedups:
        summary.append(f"speedup: geomean {statistics.geometric_mean(speedups.values()):.2f}x over {len(speedups)} kernels")
    if "gemm" in speedups:
        summary.append(f"gemm: {speedups['gemm']:.2f}x over the native baseline (target 5x)")
    mlir_worker.close()
    text = "\n".join(summary)
    print(text)
    write_results("schedules.md", "Schedules benchmark", lines, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
