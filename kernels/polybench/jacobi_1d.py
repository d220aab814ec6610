"""jacobi-1d: 1-D Jacobi stencil, 3-point average alternating between A and B. PolyBench/C 4.2.1, stencils."""

import numpy as np

NAME = "jacobi-1d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 30},
    "SMALL": {"tsteps": 40, "n": 120},
    "MEDIUM": {"tsteps": 100, "n": 400},
    "LARGE": {"tsteps": 500, "n": 2000},
    "EXTRALARGE": {"tsteps": 1000, "n": 4000},
}


def init(tsteps: int, n: int) -> dict:
    """PolyBench's init_array: A[i] = (i + 2)/n, B[i] = (i + 3)/n."""
    i = np.arange(n).astype(np.float64)
    return {"tsteps": tsteps, "n": n, "A": (i + 2) / n, "B": (i + 3) / n}


def jacobi_1d(tsteps, n, A, B):
    for t in range(tsteps):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
