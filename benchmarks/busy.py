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
Run: `.venv/bin/python benchmarks/busy.py [--kernels gemm,2mm,jacobi-2d,syr2k] [--size LARGE] [--iters 5]`;
`--swaps KERNEL=SCHEDULE` (repeatable) measures step 3 alone for the given schedules, into busy_swaps.md.
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
from dataclasses import dataclass
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
CALLS = 9


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


@dataclass(frozen=True)
class SwapLegs:
    """One schedule called with a core taken: its serial schedule, the swapped kernel (team sized per
    call) and a fixed team of every core. Medians of each leg, and the swapped and fixed legs as
    ratios to the serial leg, each the median of the ratios within one round (the legs of a round
    ran back to back, so a host that slows down between rounds moves all three)."""

    serial_s: float
    swapped_s: float
    fixed_s: float
    swapped_ratio: float
    fixed_ratio: float


def swap_legs(target: Target, size: str, schedule: str, cores: int) -> SwapLegs:
    """`CALLS` rounds after a warm-up round; each round calls the three legs once, in an order that
    rotates from round to round, on fresh inputs each call. Legs measured one after another in
    blocks read a drifting host as a difference between them (a block of serial calls at 689 ms
    and then a block of swapped ones at 1189 ms, where interleaved they ran within 15%)."""
    values = target.inputs(size)
    legs = []
    for leg_schedule, fixed_team in ((serial_of(schedule), None), (schedule, None), (schedule, cores)):
        lowered = prove_legal(target.kernel, leg_schedule).lowered
        native = build_native(target.kernel, Signature.of_values(target.kernel, values), lowered)
        legs.append((CallPlan(target.function, KernelInterface.of_kernel(target.kernel, native.signature), native), fixed_team))
    samples: list[list[float]] = [[], [], []]
    for call in range(CALLS + 1):
        for leg in [(call + offset) % 3 for offset in range(3)]:
            plan, fixed_team = legs[leg]
            inputs = fresh_copy(values)
            ordered = tuple(inputs[name] for name in plan.interface.arguments)
            prepared = plan.prepare(ordered)
            assert not isinstance(prepared, str), prepared
            start = time.perf_counter()
            if fixed_team is None:
                plan.run(prepared, ordered)
            else:
                plan.native.set_team(fixed_team)
                plan.native.run_prepared(prepared)
            if call:  # the first round warms caches and the thread pool
                samples[leg].append(time.perf_counter() - start)
    serial, swapped, fixed = samples
    return SwapLegs(
        statistics.median(serial),
        statistics.median(swapped),
        statistics.median(fixed),
        statistics.median(s / w for s, w in zip(serial, swapped, strict=True)),
        statistics.median(s / f for s, f in zip(serial, fixed, strict=True)),
    )


def describe(result: SearchResult) -> str:
    return f"`{result.schedule or '(source order)'}` {result.best_speedup:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="gemm,2mm,jacobi-2d,syr2k")
    parser.add_argument("--size", default="LARGE")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument(
        "--swaps",
        action="append",
        metavar="KERNEL=SCHEDULE",
        help="only step 3, for this schedule (repeatable): no searches; the table goes to busy_swaps.md",
    )
    args = parser.parse_args()
    cores = usable_cores()
    print(f"machine at the start: {probe_machine().describe()}", flush=True)
    swaps = [
        "| kernel | schedule | serial schedule, busy | swapped (team per call), busy | fixed team of "
        f"{cores}, busy | swapped / serial | fixed / serial |",
        "|---|---|---|---|---|---|---|",
    ]
    swap_ratios: list[float] = []

    def measure_swap(name: str, target: Target, schedule: str) -> None:
        with busy_core():
            legs = swap_legs(target, args.size, schedule, cores)
        swap_ratios.append(legs.swapped_ratio)
        swaps.append(
            f"| {name} | `{schedule}` | {legs.serial_s * 1e3:.1f} ms | {legs.swapped_s * 1e3:.1f} ms | "
            f"{legs.fixed_s * 1e3:.1f} ms | {legs.swapped_ratio:.2f}x | {legs.fixed_ratio:.2f}x |"
        )
        print(swaps[-1], flush=True)

    if args.swaps:
        for request in args.swaps:
            name, _, schedule = request.partition("=")
            measure_swap(name, resolve_target(name), schedule)
        summary = (
            f"Swapped parallel kernels with a core taken: lowest {min(swap_ratios):.2f}x their serial schedule "
            f"(target: 0.8x). {SWAP_METHOD}"
        )
        print(summary)
        write_results("busy_swaps.md", "Swapped kernels on a busy machine", swaps, summary)
        return
    searches = [
        "| kernel | quiet search's winner | busy search's winner | busy: machine_busy, re-measured | "
        "quiet re-race: quiet winner | busy winner | busy / quiet |",
        "|---|---|---|---|---|---|---|",
    ]
    fractions = []
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
            if "parallelize" in schedule:
                measure_swap(name, target, schedule)
        # Written after every kernel: a run cut short (a LARGE search of 2mm takes ten minutes) keeps what it measured.
        write_summary(searches, swaps, fractions, swap_ratios, args)


SWAP_METHOD = (
    f"Calls: {CALLS} rounds after a warm-up round, each round the three legs back to back in an order "
    "that rotates, fresh inputs each call; each leg's median, and each ratio the median of the rounds' "
    "ratios. 'busy': a CPU-bound process pinned to the last core."
)


def write_summary(searches: list[str], swaps: list[str], fractions: list[float], swap_ratios: list[float], args) -> None:
    lowest_swap = min(swap_ratios, default=float("nan"))
    summary = (
        f"Busy search's winner, re-raced on the quiet machine, as a fraction of the quiet search's: "
        f"lowest {min(fractions):.0%}, geomean {statistics.geometric_mean(fractions):.0%} (target: at least 90%). "
        f"Swapped parallel kernels with a core taken: lowest {lowest_swap:.2f}x their serial schedule (target: 0.8x). "
        f"Searches: the heuristic, {args.iters} turns of 4 candidates, at {args.size}. Re-races: {ROUNDS} alternating "
        f"rounds, each a race of 10 repeats against the baseline; the table gives the median round. {SWAP_METHOD}"
    )
    print(summary)
    write_results("busy.md", "Searches and swapped kernels on a busy machine", [*searches, "", *swaps], summary)


if __name__ == "__main__":
    main()
