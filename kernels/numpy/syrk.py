"""syrk: lower triangle of C := alpha*A@A.T + beta*C, row by row, in place. Modelled on PolyBench's syrk."""

import numpy as np

NAME = "syrk"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1000, "n": 1200},
    "EXTRALARGE": {"m": 1600, "n": 1900},
}


def init(m: int, n: int) -> dict:
    """Uniform random C (n, n) and A (n, m); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {"alpha": 1.5, "beta": 1.2, "C": rng.random((n, n)), "A": rng.random((n, m))}


def syrk(alpha, beta, C, A):
    n = C.shape[0]
    for i in range(n):
        C[i, : i + 1] = beta * C[i, : i + 1] + alpha * (A[: i + 1, :] @ A[i, :])
