"""gemver: A := A + u1*v1^T + u2*v2^T; x := x + beta*A^T*y + z; w := w + alpha*A*x.

PolyBench/C 4.2.1, linear-algebra/blas.
"""

import numpy as np

NAME = "gemver"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array: u1 = i, u2/v1/v2/y/z = ((i+1)/n)/{2,4,6,8,9}, A = (i*j%n)/n."""
    fn = float(n)
    i = np.arange(n)
    ip1 = (i + 1) / fn
    A = ((i[:, None] * i[None, :]) % n).astype(np.float64) / n
    return {
        "n": n,
        "alpha": 1.5,
        "beta": 1.2,
        "A": A,
        "u1": i.astype(np.float64),
        "v1": ip1 / 4.0,
        "u2": ip1 / 2.0,
        "v2": ip1 / 6.0,
        "w": np.zeros(n),
        "x": np.zeros(n),
        "y": ip1 / 8.0,
        "z": ip1 / 9.0,
    }


def gemver(n, alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(n):
        for j in range(n):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in range(n):
        x[i] = x[i] + z[i]
    for i in range(n):
        for j in range(n):
            w[i] = w[i] + alpha * A[i, j] * x[j]
