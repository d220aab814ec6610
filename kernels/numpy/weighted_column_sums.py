"""weighted-sums: column sums weighted per row, with Python's own `sum` and `len`."""

import numpy as np

NAME = "weighted-sums"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 8, "n": 6},
    "SMALL": {"m": 200, "n": 100},
    "MEDIUM": {"m": 2000, "n": 1000},
    "LARGE": {"m": 8000, "n": 2000},
    "EXTRALARGE": {"m": 16000, "n": 4000},
}


def init(m: int, n: int) -> dict:
    """Random matrix and row weights."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((m, n)), "w": rng.random(m)}


def weighted_column_sums(A, w):
    return sum(A * w[:, None]) / len(w)
