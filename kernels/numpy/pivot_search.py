"""pivot-search: the row of each column's largest magnitude below the diagonal, as partial pivoting looks for it."""

import numpy as np

NAME = "pivot-search"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 12},
    "SMALL": {"n": 80},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """A random matrix and where to put each column's pivot row."""
    rng = np.random.default_rng(42)
    return {"A": rng.standard_normal((n, n)), "pivots": np.zeros(n, dtype=np.int64)}


def pivot_search(A, pivots):
    n = A.shape[0]
    for k in range(n):
        best = abs(A[k, k])
        row = k
        for i in range(k + 1, n):
            if abs(A[i, k]) > best:
                best = abs(A[i, k])
                row = i
        pivots[k] = row
