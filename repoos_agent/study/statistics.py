"""The study's statistics: geometric means over instances and their bootstrap confidence intervals.

Speedups are ratios, so they are averaged geometrically (a 2x and a 0.5x cancel out).
The interval resamples instances (kernel × size) with replacement: it says how much
the geometric mean depends on which kernels happened to be in the set, with a seed so
that the same results always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A geometric mean over `count` instances with its bootstrap confidence interval."""

    value: float
    low: float
    high: float
    count: int


def geometric_mean(values: Sequence[float]) -> float:
    """The geometric mean of positive ratios; an empty sequence has none (NaN)."""
    if not values:
        return math.nan
    if any(v <= 0 for v in values):
        raise ValueError("a geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def bootstrap_geometric_mean(values: Sequence[float], seed: int, resamples: int = BOOTSTRAP_RESAMPLES) -> Estimate:
    """The geometric mean and its percentile bootstrap interval at CONFIDENCE, resampling instances."""
    if not values:
        return Estimate(math.nan, math.nan, math.nan, 0)
    logs = np.log(np.asarray(values, dtype=np.float64))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(logs), size=(resamples, len(logs)))
    means = np.exp(logs[picks].mean(axis=1))
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    point = geometric_mean(values)
    # The percentile interval of a mean of logs always brackets the point; clamp float rounding at the edges.
    return Estimate(point, min(float(low), point), max(float(high), point), len(values))


def median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count); NaN for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def format_speedup(value: float) -> str:
    """`2.37x`, with two significant digits below 0.1x so a 300-times slowdown does not read as `0.00x`."""
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"
