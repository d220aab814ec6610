"""correlation: Pearson correlation matrix of m variables over n observations, a new array. Modelled on PolyBench's."""

import numpy as np

NAME = "correlation"
CATEGORY = "datamining"
SIZES = {
    "MINI": {"m": 28, "n": 32},
    "SMALL": {"m": 80, "n": 100},
    "MEDIUM": {"m": 240, "n": 260},
    "LARGE": {"m": 2000, "n": 2600},
    "EXTRALARGE": {"m": 3200, "n": 4000},
}


def init(m: int, n: int) -> dict:
    """Uniform random data (n, m), one row per observation, with a different scale per variable."""
    rng = np.random.default_rng(42)
    return {"data": rng.random((n, m)) * rng.uniform(0.5, 4.0, m)}


def correlation(data):
    n, m = data.shape
    mean = np.mean(data, axis=0)
    stddev = np.sqrt(np.mean((data - mean) ** 2, axis=0))
    # PolyBench's guard: a (nearly) constant variable is not scaled, so nothing divides by zero.
    stddev = np.where(stddev <= 0.1, 1.0, stddev)
    standardized = (data - mean) / (np.sqrt(n) * stddev)
    corr = standardized.T @ standardized
    for i in range(m):
        corr[i, i] = 1.0
    return corr
