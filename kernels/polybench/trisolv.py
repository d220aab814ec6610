"""trisolv: forward substitution solving L*x = b for lower-triangular L. PolyBench/C 4.2.1, linear-algebra/solvers."""

import numpy as np

NAME = "trisolv"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array: x[i] = -999, b[i] = i, L[i][j] = (i+n-j+1)*2/n for j <= i
    (the C leaves the never-read upper triangle unset; it is 0 here)."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    L = np.tril((i + n - j + 1).astype(np.float64) * 2 / n)
    x = np.full(n, -999.0)
    b = np.arange(n).astype(np.float64)
    return {"n": n, "L": L, "x": x, "b": b}


def trisolv(n, L, x, b):
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
