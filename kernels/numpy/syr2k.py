"""syr2k: lower triangle of C := alpha*(A@B.T + B@A.T) + beta*C, row by row, in place. Modelled on PolyBench's syr2k."""

import numpy as np

NAME = "syr2k"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 800, "n": 1000},
    "EXTRALARGE": {"m": 1300, "n": 1600},
}


def init(m: int, n: int) -> dict:
    """Uniform random C (n, n), A and B (n, m); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {"alpha": 1.5, "beta": 1.2, "C": rng.random((n, n)), "A": rng.random((n, m)), "B": rng.random((n, m))}


def syr2k(alpha, beta, C, A, B):
    n = C.shape[0]
    for i in range(n):
        C[i, : i + 1] = beta * C[i, : i + 1] + alpha * (A[: i + 1, :] @ B[i, :] + B[: i + 1, :] @ A[i, :])
