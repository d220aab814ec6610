"""gesummv: y := alpha*A*x + beta*B*x. PolyBench/C 4.2.1, linear-algebra/blas."""

import numpy as np

NAME = "gesummv"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"n": 30},
    "SMALL": {"n": 90},
    "MEDIUM": {"n": 250},
    "LARGE": {"n": 1300},
    "EXTRALARGE": {"n": 2800},
}


def init(n: int) -> dict:
    """PolyBench's init_array: x = (i%n)/n, A = ((i*j+1)%n)/n, B = ((i*j+2)%n)/n."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return {
        "n": n,
        "alpha": 1.5,
        "beta": 1.2,
        "A": ((i * j + 1) % n).astype(np.float64) / n,
        "B": ((i * j + 2) % n).astype(np.float64) / n,
        "tmp": np.zeros(n),
        "x": (np.arange(n) % n).astype(np.float64) / n,
        "y": np.zeros(n),
    }


def gesummv(n, alpha, beta, A, B, tmp, x, y):
    for i in range(n):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(n):
            tmp[i] = A[i, j] * x[j] + tmp[i]
            y[i] = B[i, j] * x[j] + y[i]
        y[i] = alpha * tmp[i] + beta * y[i]
