"""Swap benchmark: what a swapped call costs, and `repoos bench` on gemm, jacobi-2d and a user kernel.

1. Per-call overhead: a swapped gemm on 2x2x2 inputs against calling its library's
   entry directly with the same, already-prepared C arguments (the kernel itself).
   Target: under 10 µs. Best of several repeats of many calls.
2. `repoos bench` (each leg in its own process) for each case, after a heuristic
   search (`--iters`, 0: the source order) made the VerifiedKernel it runs.

Prints the tables and writes benchmarks/results/swap.md. Run on a quiet machine:
`.venv/bin/python benchmarks/swap.py`; a quick check: `--cases gemm --iters 0 --size MINI --calls 2`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np
from report import chosen_kernels, write_results

import repoos_agent
from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.agent.search_record import record_search
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.runtime.bench import BenchRequest, run_bench
from repoos_agent.store import SQLiteStore
from repoos_agent.store.recording import record_winner
from repoos_agent.target import resolve_target

ROOT = Path(__file__).resolve().parent.parent
USER_FILE = ROOT / "kernels" / "examples" / "user_kernels.py"
CASES = {
    "gemm": ("kernels/polybench/gemm.py", "gemm", ()),
    "jacobi-2d": ("kernels/polybench/jacobi_2d.py", "jacobi_2d", ()),
    "row_norms": ("kernels/examples/user_kernels.py", "row_norms", ("A=f64[800,800]", "norms=f64[800]")),
}


def per_call_overhead(graph: str, repeats: int = 7, number: int = 20000) -> tuple[float, float, float]:
    """(swapped µs, direct µs, overhead µs) per call of gemm on 2x2x2 inputs, best of `repeats`."""
    from kernels.polybench.gemm import gemm

    swapped = repoos_agent.swap(gemm, graph=graph)
    if not swapped.native:
        raise SystemExit("the gemm VerifiedKernel did not load; see the warning above")
    values = (2, 2, 2, 1.5, 1.2, np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))
    plan = swapped.plan
    prepared = plan.prepare(values)
    run = plan.native.run_prepared
    direct = min(timeit.repeat(lambda: run(prepared), repeat=repeats, number=number)) / number * 1e6
    through = min(timeit.repeat(lambda: swapped(*values), repeat=repeats, number=number)) / number * 1e6
    return through, direct, through - direct


def make_contract(store: SQLiteStore, case: str, size: str | None, iters: int) -> str:
    script, function, args = CASES[case]
    specs = [parse_arg_spec(a) for a in args]
    target = resolve_target(f"{ROOT / script}:{function}", specs) if args else resolve_target(case)
    run_size = None if args else size
    if iters == 0:
        record_winner(store, target, None, size=run_size)
        return "(source order)"
    config = SearchConfig(iters=iters, size=run_size)
    result = optimize(target, config)
    record_search(store, target, result, config)
    return result.schedule or "(source order)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated: {', '.join(CASES)}")
    parser.add_argument("--size", default="SMALL", help="size class of the PolyBench cases")
    parser.add_argument("--calls", type=int, default=5, help="calls per bench leg")
    parser.add_argument("--iters", type=int, default=3, help="heuristic search turns for the VerifiedKernel (0: source order)")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases: {', '.join(unknown)}")
    chosen_kernels("none")  # a fresh private build cache: every build below is real
    graph = str(Path(tempfile.mkdtemp(prefix="repoos-swap-bench-")) / "graph.sqlite")
    os.environ["REPOOS_GRAPH"] = graph
    store = SQLiteStore(graph)

    lines = [
        "## Per-call overhead (gemm, 2x2x2)",
        "",
        "| swapped call | library entry called directly | overhead |",
        "|---|---|---|",
    ]
    make_contract(store, "gemm", "MINI", 0)
    through, direct, overhead = per_call_overhead(graph)
    lines.append(f"| {through:.2f} µs | {direct:.2f} µs | {overhead:.2f} µs |")
    print("\n".join(lines))

    lines += ["", f"## repoos bench ({args.calls} calls per leg)", ""]
    lines += [
        "| case | inputs | schedule | Python ms/call | swapped ms/call | gain | peak MB (Py / sw) | CPU % (Py / sw) | status |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    for case in cases:
        schedule = make_contract(store, case, args.size, args.iters)
        script, function, specs = CASES[case]
        request = BenchRequest(str(ROOT / script), function, args.calls, specs, None if specs else args.size, 0, graph)
        report = run_bench(request)
        inputs = " ".join(specs) if specs else args.size
        row = (
            f"| {case} | {inputs} | `{schedule}` | {report.python.ms_per_call:.3f} | {report.swapped.ms_per_call:.4f} | "
            f"{report.gain:.1f}x | {report.python.peak_mb:.0f} / {report.swapped.peak_mb:.0f} | "
            f"{report.python.cpu_percent:.0f} / {report.swapped.cpu_percent:.0f} | {report.status} |"
        )
        lines.append(row)
        print(row, flush=True)
    summary = (
        "Overhead: guards (dtype, dimensions, contiguity, writeability, aliasing), pointer extraction and the argument "
        "list, over the ctypes call of the same library. Bench: each leg in its own process, every call on a fresh copy "
        "of the same inputs (copies untimed); the swapped leg's first call (library load) is untimed; peak MB is the leg "
        "process's maximum resident set; status compares the legs' outputs."
    )
    write_results("swap.md", "Swapped calls", lines, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
