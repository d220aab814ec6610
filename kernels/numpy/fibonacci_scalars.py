"""fibonacci-scalars: a two-term recurrence carried in swapped scalars (`a, b = b, a + b`)."""

import numpy as np

NAME = "fibonacci-scalars"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 20},
    "SMALL": {"n": 60},
    "MEDIUM": {"n": 1000},
    "LARGE": {"n": 100000},
    "EXTRALARGE": {"n": 1000000},
}


def init(n: int) -> dict:
    """Only the length."""
    return {"n": n, "decay": 0.5}


def fibonacci_scalars(n, decay):
    a, b = 0.0, 1.0
    out = np.zeros(n)
    for i in range(n):
        out[i] = a
        a, b = b, decay * (a + b)
    return out
