"""jacobi-2d: 2-D Jacobi stencil, 5-point average alternating between A and B. PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "jacobi-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 30},
    "SMALL": {"tsteps": 40, "n": 90},
    "MEDIUM": {"tsteps": 100, "n": 250},
    "LARGE": {"tsteps": 500, "n": 1300},
    "EXTRALARGE": {"tsteps": 1000, "n": 2800},
}


def init(tsteps: int, n: int) -> dict:
    """PolyBench's init_array: A[i][j] = (i*(j+2) + 2)/n, B[i][j] = (i*(j+3) + 3)/n."""
    i = np.arange(n)[:, None].astype(np.float64)
    j = np.arange(n)[None, :]
    return {"tsteps": tsteps, "n": n, "A": (i * (j + 2) + 2) / n, "B": (i * (j + 3) + 3) / n}


def jacobi_2d(tsteps, n, A, B):
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])
