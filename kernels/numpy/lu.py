"""lu: LU decomposition without pivoting, one rank-1 update per column, L and U in place of A. Modelled on PolyBench's lu."""

import numpy as np

NAME = "lu"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 800},
    "EXTRALARGE": {"n": 1270},
}


def init(n: int) -> dict:
    """A random matrix made diagonally dominant (n on the diagonal), so no pivot is small."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((n, n)) + n * np.eye(n)}


def lu(A):
    n = A.shape[0]
    for k in range(n):
        A[k + 1 :, k] /= A[k, k]
        A[k + 1 :, k + 1 :] -= np.outer(A[k + 1 :, k], A[k, k + 1 :])
