"""symm: C := alpha*A*B + beta*C with A symmetric (lower triangle stored).

PolyBench/C 4.2.1, linear-algebra/blas.
"""

import numpy as np

NAME = "symm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1000, "n": 1200},
    "EXTRALARGE": {"m": 2000, "n": 2600},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: C = ((i+j)%100)/m, B = ((n+i-j)%100)/m,
    A = ((i+j)%100)/m on and below the diagonal, -999 above it (never read)."""
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    jm = np.arange(m)[None, :]
    C = ((i + j) % 100).astype(np.float64) / m
    B = ((n + i - j) % 100).astype(np.float64) / m
    A = np.where(jm <= i, ((i + jm) % 100).astype(np.float64) / m, -999.0)
    return {"m": m, "n": n, "alpha": 1.5, "beta": 1.2, "C": C, "A": A, "B": B}


def symm(m, n, alpha, beta, C, A, B):
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2
