"""covariance: the sample covariance matrix of m variables over n observations, a new array. Modelled on PolyBench's covariance."""

import numpy as np

NAME = "covariance"
CATEGORY = "datamining"
SIZES = {
    "MINI": {"m": 28, "n": 32},
    "SMALL": {"m": 80, "n": 100},
    "MEDIUM": {"m": 240, "n": 260},
    "LARGE": {"m": 2000, "n": 2600},
    "EXTRALARGE": {"m": 3200, "n": 4000},
}


def init(m: int, n: int) -> dict:
    """Uniform random data (n, m): one row per observation."""
    rng = np.random.default_rng(42)
    return {"data": rng.random((n, m))}


def covariance(data):
    n = data.shape[0]
    mean = np.mean(data, axis=0)
    centered = data - mean
    return centered.T @ centered / (n - 1)
