"""syrk: C := alpha*A*A^T + beta*C on the lower triangle of C.

PolyBench/C 4.2.1, linear-algebra/blas.
"""

import numpy as np

NAME = "syrk"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1000, "n": 1200},
    "EXTRALARGE": {"m": 2000, "n": 2600},
}


def init(n: int, m: int) -> dict:
    """PolyBench's init_array: A = ((i*j+1)%n)/n, C = ((i*j+2)%m)/m."""
    i = np.arange(n)[:, None]
    jm = np.arange(m)[None, :]
    jn = np.arange(n)[None, :]
    A = ((i * jm + 1) % n).astype(np.float64) / n
    C = ((i * jn + 2) % m).astype(np.float64) / m
    return {"n": n, "m": m, "alpha": 1.5, "beta": 1.2, "C": C, "A": A}


def syrk(n, m, alpha, beta, C, A):
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]
