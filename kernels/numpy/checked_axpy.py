"""checked-axpy: a*x + y behind the argument checks a library writes at entry."""

import numpy as np

NAME = "checked-axpy"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 64},
    "SMALL": {"n": 4096},
    "MEDIUM": {"n": 500000},
    "LARGE": {"n": 8000000},
    "EXTRALARGE": {"n": 32000000},
}


def init(n: int) -> dict:
    """Uniform random x and y."""
    rng = np.random.default_rng(42)
    return {"a": 1.5, "x": rng.random(n), "y": rng.random(n)}


def checked_axpy(a, x, y):
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 1:
        raise ValueError("x must be one-dimensional")
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} != {len(y)}")
    return a * x + y
