"""clip-outliers: values beyond k standard deviations pulled back to the bound, with masked assignments."""

import numpy as np

NAME = "clip-outliers"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 64},
    "SMALL": {"n": 4096},
    "MEDIUM": {"n": 200000},
    "LARGE": {"n": 4000000},
    "EXTRALARGE": {"n": 16000000},
}


def init(n: int) -> dict:
    """Heavy-tailed random values."""
    rng = np.random.default_rng(42)
    return {"x": rng.standard_t(3, n)}


def clip_outliers(x, k=3.0):
    mu = x.mean()
    sigma = np.sqrt(np.mean((x - mu) ** 2))
    hi = mu + k * sigma
    lo = mu - k * sigma
    y = x.copy()
    y[y > hi] = hi
    y[y < lo] = lo
    return y
