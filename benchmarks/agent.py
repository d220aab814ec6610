"""Agent benchmark: the offline heuristic search on every bundled kernel.

For each kernel: `optimize` with the heuristic backend (one dialogue), the winning
schedule, its speedup over the native baseline after the racing finish, the number of
evaluations and their verdicts, the share of runnable proposals, and the wall time.
Prints a table and writes it to benchmarks/results/agent.md. Until `repoos eval`
exists (with Numba, Graphite and Polly in the same run), this is the search's scoreboard.
Run: `.venv/bin/python benchmarks/agent.py [--size MEDIUM] [--iters 3] [--candidates 3]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from report import chosen_kernels, write_results

from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.target import resolve_target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="MEDIUM")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=3)
    parser.add_argument("--kernels", default="all")
    args = parser.parse_args()
    chosen = chosen_kernels(args.kernels)
    header = "| kernel | best schedule | speedup | spread | evaluations | runnable | wall s |"
    lines = [header, "|---" * 7 + "|"]
    print(header, flush=True)
    speedups, walls, runnable_shares = [], [], []
    for bundled in chosen:
        config = SearchConfig(iters=args.iters, candidates=args.candidates, size=args.size)
        result = optimize(resolve_target(bundled.name), config)
        runnable = sum(count for verdict, count in result.verdicts.items() if verdict == "legal")
        share = runnable / result.evaluations if result.evaluations else 1.0
        speedups.append(result.best_speedup)
        walls.append(result.wall_s)
        runnable_shares.append(share)
        line = (
            f"| {bundled.name} | `{result.schedule or '(identity)'}` | {result.best_speedup:.2f}x | ±{result.best_spread:.0%} "
            f"| {result.evaluations} | {share:.0%} | {result.wall_s:.1f} |"
        )
        lines.append(line)
        print(line, flush=True)
    summary = (
        f"\n{len(chosen)} kernels at {args.size}, {args.iters} turns x {args.candidates} candidates: geomean speedup "
        f"{statistics.geometric_mean(speedups):.2f}x over the native baseline (min {min(speedups):.2f}x); "
        f"runnable proposals {statistics.mean(runnable_shares):.0%}; median wall time {statistics.median(walls):.1f} s per kernel"
    )
    print(summary)
    write_results("agent.md", "Agent benchmark (heuristic backend)", lines, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
