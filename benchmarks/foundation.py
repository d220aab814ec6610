"""Foundation benchmark: ingest, build and run all 30 PolyBench kernels.

Prints a table and writes it to benchmarks/results/foundation.md. Columns:
statements, ingest ms, cold build ms (empty cache), cached build ms (model in hand:
key, cache lookup, library load), Python and
native seconds at MINI and SMALL (with the SMALL speedup), native seconds at
LARGE. Native times are medians over repeats after a warm-up; Python times are
one run each (they are long). Run: `.venv/bin/python benchmarks/foundation.py`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from report import chosen_kernels, write_results

from repoos_agent.backends import build_baseline
from repoos_agent.check import fresh_copy, run_python
from repoos_agent.ingest import load_kernel
from repoos_agent.measure import time_runs
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target


def native_seconds(native, values, slow_s: float = 1.0) -> float:
    """Median of repeats; a kernel slower than `slow_s` per run is timed once after no warm-up."""
    start = time.perf_counter()
    native(fresh_copy(values))
    first = time.perf_counter() - start
    if first > slow_s:
        return first
    return time_runs(native, lambda: fresh_copy(values), warmups=0, min_repeats=5).median_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="all", help="comma-separated names, or all")
    parser.add_argument("--no-large", action="store_true", help="skip the LARGE column")
    args = parser.parse_args()
    chosen = chosen_kernels(args.kernels)

    header = (
        "| kernel | stmts | ingest ms | build ms (cold) | build ms (cached) | Python s MINI | native s MINI "
        "| Python s SMALL | native s SMALL | speedup SMALL | native s LARGE |"
    )
    lines = [header, "|---" * 11 + "|"]
    print(header, flush=True)
    ingest_total, speedups, cached_builds = 0.0, [], []
    for bundled in chosen:
        start = time.perf_counter()
        kernel = load_kernel(bundled.path, bundled.function)
        ingest_ms = (time.perf_counter() - start) * 1000
        ingest_total += ingest_ms
        target = resolve_target(bundled.name)
        row = {}
        for size in ("MINI", "SMALL"):
            values = bundled.inputs(size)
            signature = Signature.of_values(kernel, values)
            start = time.perf_counter()
            native = build_baseline(kernel, signature)
            build_ms = (time.perf_counter() - start) * 1000
            if size == "MINI":
                row["cold"] = build_ms
                cached = []
                for _ in range(5):
                    start = time.perf_counter()
                    build_baseline(kernel, signature)
                    cached.append((time.perf_counter() - start) * 1000)
                row["cached"] = statistics.median(cached)
                cached_builds.append(row["cached"])
            row[f"py_{size}"] = run_python(target, fresh_copy(values))
            row[f"nat_{size}"] = native_seconds(native, values)
        speedup = row["py_SMALL"] / row["nat_SMALL"]
        speedups.append(speedup)
        large = "skipped"
        if not args.no_large:
            values = bundled.inputs("LARGE")
            native = build_baseline(kernel, Signature.of_values(kernel, values))
            large = f"{native_seconds(native, values):.3f}"
        line = (
            f"| {bundled.name} | {len(kernel.statements)} | {ingest_ms:.1f} | {row['cold']:.0f} | {row['cached']:.1f} "
            f"| {row['py_MINI']:.4f} | {row['nat_MINI']:.6f} | {row['py_SMALL']:.3f} | {row['nat_SMALL']:.6f} "
            f"| {speedup:.0f}x | {large} |"
        )
        lines.append(line)
        print(line, flush=True)
    summary = (
        f"\n{len(chosen)} kernels: ingest {ingest_total:.0f} ms in total (target < 2000); "
        f"cached build median {statistics.median(cached_builds):.1f} ms, max {max(cached_builds):.1f} ms (target < 50); "
        f"speedup over Python at SMALL: min {min(speedups):.0f}x, geomean "
        f"{statistics.geometric_mean(speedups):.0f}x (target >= 100x on every kernel)"
    )
    print(summary)
    write_results("foundation.md", "Foundation benchmark", lines, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
