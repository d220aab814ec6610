"""What every benchmark script shares: choosing kernels, a private build cache, writing the table."""

from __future__ import annotations

import gc
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from repoos_agent.catalog import BundledKernel, bundled_kernels
from repoos_agent.measure import Timing
from repoos_agent.measure.provenance import provenance

RESULTS = Path(__file__).parent / "results"


def chosen_kernels(names: str) -> list[BundledKernel]:
    """`all`, or a comma-separated list of PolyBench names; builds go to a fresh cache so they are real."""
    os.environ["REPOOS_CACHE_DIR"] = tempfile.mkdtemp(prefix="repoos-bench-cache-")
    return [k for k in bundled_kernels() if names == "all" or k.name in names.split(",")]


def write_results(file_name: str, title: str, lines: list[str], summary: str) -> None:
    """The table and its summary, under the commit, CPU, cores, date and command (`provenance`), to
    benchmarks/results/FILE_NAME."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / file_name
    header = f"# {title}\n\n{provenance().line()}\n\n"
    path.write_text(header + "\n".join(lines) + "\n\n" + summary.strip() + "\n")
    print(f"written to {path}")


def repeats_for(call_s: float, at_least: int, budget_s: float = 1.0, at_most: int = 41) -> int:
    """How often to time a call that took `call_s` warm: `at_least`, or more for short calls, until about
    `budget_s` of samples, so a median of milliseconds is not decided by a few samples on a noisy machine."""
    return max(at_least, min(at_most, int(budget_s / max(call_s, 1e-6))))


def timed_in_turns(
    calls: Mapping[str, Callable[[], object]],
    repeats: int,
    held: Callable[[], AbstractContextManager[object]] = nullcontext,
    most_rounds: int = 41,
) -> dict[str, Timing]:
    """Every call warmed once, then timed in rounds of one run each, the order rotating each round.

    Contenders timed one block after another each see a different machine: the one timed while
    another process, the database's buffer pool or the collector had a bad second takes all of
    it. In turns, a drift weighs on every contender alike, so their ratio holds. Rounds are
    `repeats`, or more while a round is short (`repeats_for` on the mean call).

    The cyclic collector runs, untimed, before every timed call: each call then pays for the
    collections its own objects cause, not for the garbage the contender before it left (35,000
    rows of tuples tip a full collection of the whole heap into whichever call comes next).

    `held` is entered around each timed call alone, the wait for it untimed: the engine's
    `measurement_lock`, so that no search's timed run or compiler runs beside it. `most_rounds` caps the
    rounds of short calls: each costs a collection of the whole heap per contender."""
    names = list(calls)
    start = time.perf_counter()
    for name in names:
        calls[name]()
    rounds = repeats_for((time.perf_counter() - start) / len(names), repeats, at_most=most_rounds)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(rounds):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            with held():
                start = time.perf_counter()
                calls[name]()
                samples[name].append(time.perf_counter() - start)
    return {name: Timing.of(times) for name, times in samples.items()}
