"""trmm: B := alpha*A^T*B with A unit lower triangular. PolyBench/C 4.2.1, linear-algebra/blas."""

import numpy as np

NAME = "trmm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1000, "n": 1200},
    "EXTRALARGE": {"m": 2000, "n": 2600},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: A = ((i+j)%m)/m below the diagonal, 1 on it (the C leaves the
    never-read upper triangle unset; zeros here), B = ((n+(i-j))%n)/n."""
    i = np.arange(m)[:, None]
    jm = np.arange(m)[None, :]
    jn = np.arange(n)[None, :]
    A = np.where(jm < i, ((i + jm) % m).astype(np.float64) / m, 0.0)
    A[np.arange(m), np.arange(m)] = 1.0
    B = ((n + (i - jn)) % n).astype(np.float64) / n
    return {"m": m, "n": n, "alpha": 1.5, "A": A, "B": B}


def trmm(m, n, alpha, A, B):
    for i in range(m):
        for j in range(n):
            for k in range(i + 1, m):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]
