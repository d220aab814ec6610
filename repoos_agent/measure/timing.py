"""Honest timing: warm-ups, repeats, median and spread, one timed run at a time."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from repoos_agent.measure.lock import measurement_lock

T = TypeVar("T")

MODE_GAP = 1.5
"""Samples split into two groups when the slower group's fastest run is 1.5x the faster group's slowest."""


@dataclass(frozen=True)
class Modes:
    """Two groups of samples far apart: the kernel ran in two different states of the machine
    (a core taken part of the time, threads parked behind another process), not one noisy state."""

    fast_s: float
    fast_runs: int
    slow_s: float
    slow_runs: int

    def describe(self) -> str:
        return (
            f"samples fall in two groups, {self.fast_runs} runs near {seconds_text(self.fast_s)} and "
            f"{self.slow_runs} near {seconds_text(self.slow_s)}"
        )


@dataclass(frozen=True)
class Timing:
    """Seconds per run: the median and the relative interquartile spread of the samples, and
    the two groups they fall in when they are bimodal (a finding to report, not a spread)."""

    median_s: float
    spread: float
    samples: tuple[float, ...]
    modes: Modes | None = None

    @staticmethod
    def of(samples: list[float]) -> Timing:
        median = statistics.median(samples)
        first, third = _middle_half(samples)
        spread = (third - first) / median if median > 0 else 0.0
        return Timing(median, spread, tuple(samples), two_groups(samples))

    def middle_half(self) -> tuple[float, float]:
        """The first and third quartiles of the samples (their extremes under four samples): where half the runs fall."""
        return _middle_half(self.samples)


def _middle_half(samples: Sequence[float]) -> tuple[float, float]:
    if len(samples) < 4:
        return min(samples), max(samples)
    first, _, third = statistics.quantiles(samples, n=4)
    return first, third


def two_groups(samples: list[float]) -> Modes | None:
    """The two groups `samples` fall in, split at their widest gap, when that gap is at least
    `MODE_GAP` and each side has two runs or more (a single slow run is an outlier, which the
    median already ignores); None for one group."""
    ordered = sorted(samples)
    if len(ordered) < 4 or ordered[0] <= 0:
        return None
    cut = max(range(1, len(ordered)), key=lambda k: ordered[k] / ordered[k - 1])
    fast, slow = ordered[:cut], ordered[cut:]
    if ordered[cut] / ordered[cut - 1] < MODE_GAP or len(fast) < 2 or len(slow) < 2:
        return None
    return Modes(statistics.median(fast), len(fast), statistics.median(slow), len(slow))


def seconds_text(seconds: float) -> str:
    """A time as a reader takes it in: three digits, in ms under a second."""
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def time_runs(
    run: Callable[[T], object],
    prepare: Callable[[], T],
    warmups: int = 1,
    min_repeats: int = 5,
    max_repeats: int = 50,
    min_total_s: float = 0.2,
) -> Timing:
    """Time `run(prepare())`: `prepare` (fresh inputs) is never inside the clock."""
    for _ in range(warmups):
        inputs = prepare()
        with measurement_lock():
            run(inputs)
    samples: list[float] = []
    while len(samples) < min_repeats or (sum(samples) < min_total_s and len(samples) < max_repeats):
        inputs = prepare()
        with measurement_lock():
            start = time.perf_counter()
            run(inputs)
            samples.append(time.perf_counter() - start)
    return Timing.of(samples)
