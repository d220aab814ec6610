"""cholesky: Cholesky factor of an SPD matrix, column by column, into A's lower triangle. Modelled on PolyBench's cholesky."""

import numpy as np

NAME = "cholesky"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 1600},
    "EXTRALARGE": {"n": 2500},
}


def init(n: int) -> dict:
    """A symmetric positive definite M@M.T/n + I from a uniform random M."""
    rng = np.random.default_rng(42)
    M = rng.random((n, n))
    return {"A": M @ M.T / n + np.eye(n)}


def cholesky(A):
    n = A.shape[0]
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - A[j, :j] @ A[j, :j])
        A[j + 1 :, j] = (A[j + 1 :, j] - A[j + 1 :, :j] @ A[j, :j]) / A[j, j]
