"""gramschmidt: QR decomposition A = Q*R by modified Gram-Schmidt. PolyBench/C 4.2.1, linear-algebra/solvers."""

import math

import numpy as np

NAME = "gramschmidt"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"m": 20, "n": 30},
    "SMALL": {"m": 60, "n": 80},
    "MEDIUM": {"m": 200, "n": 240},
    "LARGE": {"m": 1000, "n": 1200},
    "EXTRALARGE": {"m": 2000, "n": 2600},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: A[i][j] = (((i*j) % m)/m)*100 + 10, R = 0, Q = 0."""
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    A = ((i * j) % m).astype(np.float64) / m * 100 + 10
    return {"m": m, "n": n, "A": A, "R": np.zeros((n, n)), "Q": np.zeros((m, n))}


def gramschmidt(m, n, A, R, Q):
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = math.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]
