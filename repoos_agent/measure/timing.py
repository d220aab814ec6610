"""Honest timing: warm-ups, repeats, median and spread, one timed run at a time."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from repoos_agent.measure.lock import measurement_lock

T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    """Seconds per run: the median and the relative interquartile spread of the samples."""

    median_s: float
    spread: float
    samples: tuple[float, ...]

    @staticmethod
    def of(samples: list[float]) -> Timing:
        median = statistics.median(samples)
        if len(samples) >= 4:
            quartiles = statistics.quantiles(samples, n=4)
            spread = (quartiles[2] - quartiles[0]) / median if median > 0 else 0.0
        else:
            spread = (max(samples) - min(samples)) / median if median > 0 else 0.0
        return Timing(median, spread, tuple(samples))


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
