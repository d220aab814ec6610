"""running-mean-zip: the mean of neighbouring pairs, the pairs taken with `zip` over shifted slices."""

import numpy as np

NAME = "running-mean-zip"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 64},
    "SMALL": {"n": 4096},
    "MEDIUM": {"n": 200000},
    "LARGE": {"n": 2000000},
    "EXTRALARGE": {"n": 8000000},
}


def init(n: int) -> dict:
    """Uniform random values."""
    rng = np.random.default_rng(42)
    return {"x": rng.random(n)}


def running_mean_zip(x):
    out = np.empty(len(x) - 1)
    for i, (a, b) in enumerate(zip(x[1:], x[:-1])):
        out[i] = 0.5 * (a + b)
    return out
