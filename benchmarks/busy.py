"""Searches on a busy machine: do they give the answer a quiet one gives, and do swapped kernels hold up?

For each kernel at LARGE, in one run of this script:

1. a search on the quiet machine, then the same search with a CPU-bound process pinned to the
   last core (a user's build, a browser tab, a shared CI box);
2. both winners raced again on the quiet machine, in alternating rounds, each against the baseline:
   the busy search's winner as a fraction of the quiet search's (target: at least 90%);
3. with the core taken again, the winner called as a swapped kernel (its team sized at each call)
   against its serial schedule (the same schedule without its `parallelize` marks), and against the
   same kernel on a fixed team of every core, as it ran before teams were sized (target: the
   swapped kernel never below 0.8x its serial schedule).

Prints a table and writes it to benchmarks/results/busy.md.
Run: `.venv/bin/python benchmarks/busy.py [--kernels gemm,2mm,jacobi-2d,syr2k] [--size LARGE] [--iters 5]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from report import write_results

from repoos_agent.agent.search import SearchConfig, SearchResult, evaluate_candidate, optimize
from repoos_agent.backends import build_native
from repoos_agent.legality import prove_legal
from repoos_agent.measure.cores import probe_machine, usable_cores
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.model import Signature
from repoos_agent.runtime.plan import CallPlan, KernelInterface
from repoos_agent.schedule import parse_schedule
from repoos_agent.target import Target, resolve_target

ROUNDS = 3
CALLS = 7


@contextmanager
def busy_core() -> Iterator[None]:
    """A CPU-bound process pinned to the last core for the block's duration."""
    core = max(os.sched_getaffinity(0))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    time.sleep(0.5)
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def serial_of(schedule: str) -> str:
    """The same schedule without its parallel marks: the loops in the same order on one thread."""
    return "; ".join(str(p) for p in parse_schedule(schedule).primitives if p.name != "parallelize")


def rerace(target: Target, config: SearchConfig, schedules: list[str]) -> dict[str, list[float]]:
    """Each schedule's speedup over the baseline in `ROUNDS` alternating rounds on the machine as it is now."""
    speedups: dict[str, list[float]] = {s: [] for s in schedules}
    for _ in range(ROUNDS):
        for schedule in schedules:
            if not schedule:
                speedups[schedule].append(1.0)
                continue
            evaluation = evaluate_candidate(target, schedule, config, repeats=10)
            speedups[schedule].append(evaluation.speedup or 0.0)
    return speedups


def call_seconds(target: Target, size: str, schedule: str, fixed_team: int | None) -> float:
    """Median seconds of `CALLS` calls of `schedule` through the swap's call plan (its team sized per call),
    or on a `fixed_team` of threads, with fresh inputs each call."""
    values = target.inputs(size)
    native = build_native(target.kernel, Signature.of_values(target.kernel, values), prove_legal(target.kernel, schedule).lowered)
    plan = CallPlan(target.function, KernelInterface.of_kernel(target.kernel, native.signature), native)
    samples = []
    for call in range(CALLS + 1):
        inputs = fresh_copy(values)
        ordered = tuple(inputs[name] for name in plan.interface.arguments)
        prepared = plan.prepare(ordered)
        assert not isinstance(prepared, str), prepared
        start = time.perf_counter()
        if fixed_team is None:
            plan.run(prepared, ordered)
        else:
            native.set_team(fixed_team)
            native.run_prepared(prepared)
        if call:  # the first call warms caches and the thread pool
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def describe(result: SearchResult) -> str:
    return f"`{result.schedule or '(source order)'}` {result.best_speedup:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="gemm,2mm,jacobi-2d,syr2k")
    parser.add_argument("--size", default="LARGE")
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args()
    cores = usable_cores()
    print(f"machine at the start: {probe_machine().describe()}", flush=True)
    searches = [
        "| kernel | quiet search's winner | busy search's winner | busy: machine_busy, re-measured | "
        "quiet re-race: quiet winner | busy winner | busy / quiet |",
        "|---|---|---|---|---|---|---|",
    ]
    swaps = [
        "| kernel | schedule | serial schedule, busy | swapped (team per call), busy | fixed team of "
        f"{cores}, busy | swapped / serial | fixed / serial |",
        "|---|---|---|---|---|---|---|",
    ]
    fractions, swap_ratios = [], []
    for name in args.kernels.split(","):
        target = resolve_target(name)
        config = SearchConfig(size=args.size, iters=args.iters)
        quiet = optimize(target, config)
        print(f"{name}: quiet search {describe(quiet)} in {quiet.wall_s:.0f} s", flush=True)
        with busy_core():
            busy = optimize(target, config)
        print(f"{name}: busy search {describe(busy)} in {busy.wall_s:.0f} s; {busy.finish}", flush=True)
        raced = rerace(target, config, list(dict.fromkeys([quiet.schedule, busy.schedule])))
        quiet_again, busy_again = statistics.median(raced[quiet.schedule]), statistics.median(raced[busy.schedule])
        fraction = busy_again / quiet_again
        fractions.append(fraction)
        searches.append(
            f"| {name} | {describe(quiet)} | {describe(busy)} | {busy.machine_busy}, {busy.remeasured} | "
            f"{quiet_again:.2f}x | {busy_again:.2f}x | {fraction:.0%} |"
        )
        print(searches[-1], flush=True)
        for schedule in dict.fromkeys([busy.schedule, quiet.schedule]):
            if "parallelize" not in schedule:
                continue
            with busy_core():
                serial = call_seconds(target, args.size, serial_of(schedule), None)
                swapped = call_seconds(target, args.size, schedule, None)
                fixed = call_seconds(target, args.size, schedule, cores)
            swap_ratios.append(serial / swapped)
            swaps.append(
                f"| {name} | `{schedule}` | {serial * 1e3:.1f} ms | {swapped * 1e3:.1f} ms | {fixed * 1e3:.1f} ms | "
                f"{serial / swapped:.2f}x | {serial / fixed:.2f}x |"
            )
            print(swaps[-1], flush=True)
        # Written after every kernel: a run cut short (a LARGE search of 2mm takes ten minutes) keeps what it measured.
        write_summary(searches, swaps, fractions, swap_ratios, args)


def write_summary(searches: list[str], swaps: list[str], fractions: list[float], swap_ratios: list[float], args) -> None:
    lowest_swap = min(swap_ratios, default=float("nan"))
    summary = (
        f"Busy search's winner, re-raced on the quiet machine, as a fraction of the quiet search's: "
        f"lowest {min(fractions):.0%}, geomean {statistics.geometric_mean(fractions):.0%} (target: at least 90%). "
        f"Swapped parallel kernels with a core taken: lowest {lowest_swap:.2f}x their serial schedule (target: 0.8x). "
        f"Searches: the heuristic, {args.iters} turns of 4 candidates, at {args.size}. Re-races: {ROUNDS} alternating "
        f"rounds, each a race of 10 repeats against the baseline; the table gives the median round. Calls: median of "
        f"{CALLS} after one warm-up, fresh inputs each call. 'busy': a CPU-bound process pinned to the last core."
    )
    print(summary)
    write_results("busy.md", "Searches and swapped kernels on a busy machine", [*searches, "", *swaps], summary)


if __name__ == "__main__":
    main()
