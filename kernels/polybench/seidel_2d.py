"""seidel-2d: 2-D Gauss-Seidel stencil, 9-point average updated in place. PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "seidel-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 40},
    "SMALL": {"tsteps": 40, "n": 120},
    "MEDIUM": {"tsteps": 100, "n": 400},
    "LARGE": {"tsteps": 500, "n": 2000},
    "EXTRALARGE": {"tsteps": 1000, "n": 4000},
}


def init(tsteps: int, n: int) -> dict:
    """PolyBench's init_array: A[i][j] = (i*(j+2) + 2)/n."""
    i = np.arange(n)[:, None].astype(np.float64)
    j = np.arange(n)[None, :]
    return {"tsteps": tsteps, "n": n, "A": (i * (j + 2) + 2) / n}


def seidel_2d(tsteps, n, A):
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (
                    A[i - 1, j - 1]
                    + A[i - 1, j]
                    + A[i - 1, j + 1]
                    + A[i, j - 1]
                    + A[i, j]
                    + A[i, j + 1]
                    + A[i + 1, j - 1]
                    + A[i + 1, j]
                    + A[i + 1, j + 1]
                ) / 9.0
