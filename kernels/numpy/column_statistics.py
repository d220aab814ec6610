"""column-statistics: per-column variance, standard deviation, weighted average and running totals, as a data summary."""

import numpy as np

NAME = "column-statistics"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 10, "n": 4},
    "SMALL": {"m": 200, "n": 30},
    "MEDIUM": {"m": 2000, "n": 200},
    "LARGE": {"m": 20000, "n": 400},
    "EXTRALARGE": {"m": 40000, "n": 800},
}


def init(m: int, n: int) -> dict:
    """Normal random samples (m, n) and positive weights per row."""
    rng = np.random.default_rng(42)
    return {"X": rng.standard_normal((m, n)) * 3.0 + 1.0, "w": rng.random(m) + 0.1}


def column_statistics(X, w):
    spread = X.var(axis=0)
    scale = np.std(X, axis=0, ddof=1)
    centre = np.average(X, axis=0, weights=w)
    totals = np.cumsum(X, axis=0)
    return (X - centre) / scale, spread, totals[-1]
