"""row-normalize: every row scaled to unit sum in place, the rows taken with `for row in A`."""

import numpy as np

NAME = "row-normalize"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "n": 12},
    "SMALL": {"m": 100, "n": 120},
    "MEDIUM": {"m": 1000, "n": 1000},
    "LARGE": {"m": 4000, "n": 4000},
    "EXTRALARGE": {"m": 8000, "n": 8000},
}


def init(m: int, n: int) -> dict:
    """Positive random rows."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((m, n)) + 0.1}


def row_normalize(A):
    for row in A:
        row /= row.sum()
