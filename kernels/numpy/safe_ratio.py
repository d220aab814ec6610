"""safe-ratio: a ratio under `np.errstate`, kept only where the divisor is large enough."""

import numpy as np

NAME = "safe-ratio"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 64},
    "SMALL": {"n": 4096},
    "MEDIUM": {"n": 500000},
    "LARGE": {"n": 8000000},
    "EXTRALARGE": {"n": 16000000},
}


def init(n: int) -> dict:
    """Uniform random values, the divisors zero at every seventh place."""
    rng = np.random.default_rng(42)
    b = rng.random(n)
    b[::7] = 0.0
    return {"a": rng.random(n), "b": b}


def safe_ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    return np.where(b > 0.25, r, 0.0)
