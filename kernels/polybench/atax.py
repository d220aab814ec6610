"""atax: y := A^T*(A*x). PolyBench/C 4.2.1, linear-algebra/kernels."""

import numpy as np

NAME = "atax"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"m": 38, "n": 42},
    "SMALL": {"m": 116, "n": 124},
    "MEDIUM": {"m": 390, "n": 410},
    "LARGE": {"m": 1900, "n": 2100},
    "EXTRALARGE": {"m": 1800, "n": 2200},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: x = 1 + i/(double)n, A = ((i+j)%n)/(5*m)."""
    fn = float(n)
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    return {
        "m": m,
        "n": n,
        "A": ((i + j) % n).astype(np.float64) / (5 * m),
        "x": 1 + np.arange(n) / fn,
        "y": np.zeros(n),
        "tmp": np.zeros(m),
    }


def atax(m, n, A, x, y, tmp):
    for i in range(n):
        y[i] = 0.0
    for i in range(m):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(n):
            y[j] = y[j] + A[i, j] * tmp[i]
