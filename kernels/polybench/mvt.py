"""mvt: x1 := x1 + A*y_1, x2 := x2 + A^T*y_2. PolyBench/C 4.2.1, linear-algebra/kernels."""

import numpy as np

NAME = "mvt"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array: x1 = (i%n)/n, x2 = ((i+1)%n)/n, y_1 = ((i+3)%n)/n,
    y_2 = ((i+4)%n)/n, A = (i*j%n)/n."""
    i = np.arange(n)
    return {
        "n": n,
        "x1": (i % n).astype(np.float64) / n,
        "x2": ((i + 1) % n).astype(np.float64) / n,
        "y_1": ((i + 3) % n).astype(np.float64) / n,
        "y_2": ((i + 4) % n).astype(np.float64) / n,
        "A": ((i[:, None] * i[None, :]) % n).astype(np.float64) / n,
    }


def mvt(n, x1, x2, y_1, y_2, A):
    for i in range(n):
        for j in range(n):
            x1[i] = x1[i] + A[i, j] * y_1[j]
    for i in range(n):
        for j in range(n):
            x2[i] = x2[i] + A[j, i] * y_2[j]
