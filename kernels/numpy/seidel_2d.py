"""seidel-2d: 2-D Gauss-Seidel sweeps of the 9-point average, row by row, in place. Modelled on PolyBench's seidel-2d."""

import numpy as np

NAME = "seidel-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 4, "n": 20},
    "SMALL": {"tsteps": 8, "n": 40},
    "MEDIUM": {"tsteps": 10, "n": 120},
    "LARGE": {"tsteps": 10, "n": 300},
    "EXTRALARGE": {"tsteps": 20, "n": 420},
}


def init(tsteps: int, n: int) -> dict:
    """Uniform random A (n, n)."""
    rng = np.random.default_rng(42)
    return {"tsteps": tsteps, "A": rng.random((n, n))}


def seidel_2d(tsteps, A):
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            # Row i-1 is already this sweep's; row i+1 and the right neighbours are the last sweep's: one slice.
            A[i, 1:-1] += A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:]
            # The left neighbour is this sweep's too, so the row finishes as a recurrence along j.
            for j in range(1, n - 1):
                A[i, j] = (A[i, j] + A[i, j - 1]) / 9.0
