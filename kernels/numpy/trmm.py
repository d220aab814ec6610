"""trmm: B := alpha*A.T@B with A unit lower triangular, row by row, in place. Modelled on PolyBench's trmm."""

import numpy as np

NAME = "trmm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1400, "n": 1600},
    "EXTRALARGE": {"m": 2200, "n": 2600},
}


def init(m: int, n: int) -> dict:
    """Uniform random A (m, m) (only below the diagonal is read) and B (m, n); alpha 1.5."""
    rng = np.random.default_rng(42)
    return {"alpha": 1.5, "A": rng.random((m, m)), "B": rng.random((m, n))}


def trmm(alpha, A, B):
    m = B.shape[0]
    for i in range(m):
        # Rows below i are still the original B: row i is finished before any of them changes.
        B[i, :] = alpha * (B[i, :] + B[i + 1 :, :].T @ A[i + 1 :, i])
