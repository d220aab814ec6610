"""symm: C := alpha*A@B + beta*C with A symmetric and only its lower triangle read, row by row. Modelled on PolyBench's symm."""

import numpy as np

NAME = "symm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 700, "n": 800},
    "EXTRALARGE": {"m": 1100, "n": 1300},
}


def init(m: int, n: int) -> dict:
    """Uniform random C, B (m, n) and A (m, m) (its upper triangle is never read); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {"alpha": 1.5, "beta": 1.2, "C": rng.random((m, n)), "A": rng.random((m, m)), "B": rng.random((m, n))}


def symm(alpha, beta, C, A, B):
    m = C.shape[0]
    for i in range(m):
        # Row i of the lower triangle stands for both A[i, :i] and, by symmetry, column i above the diagonal.
        C[:i, :] += alpha * np.outer(A[i, :i], B[i, :])
        C[i, :] = beta * C[i, :] + alpha * A[i, i] * B[i, :] + alpha * (B[:i, :].T @ A[i, :i])
