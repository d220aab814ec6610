"""durbin: Levinson-Durbin recursion solving a Toeplitz system (Yule-Walker). PolyBench/C 4.2.1, linear-algebra/solvers."""

import numpy as np

NAME = "durbin"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array: r[i] = n + 1 - i. y is output only; z is the kernel's local
    array `DATA_TYPE z[N]`, passed in as scratch."""
    r = (n + 1 - np.arange(n)).astype(np.float64)
    return {"n": n, "r": r, "y": np.zeros(n), "z": np.zeros(n)}


def durbin(n, r, y, z):
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        sum = 0.0
        for i in range(k):
            sum += r[k - i - 1] * y[i]
        alpha = -(r[k] + sum) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
