"""jacobi-2d: 2-D Jacobi stencil, 5-point average alternating between A and B, in place. Modelled on PolyBench's jacobi-2d."""

import numpy as np

NAME = "jacobi-2d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 30},
    "SMALL": {"tsteps": 40, "n": 90},
    "MEDIUM": {"tsteps": 100, "n": 250},
    "LARGE": {"tsteps": 50, "n": 1000},
    "EXTRALARGE": {"tsteps": 100, "n": 1400},
}


def init(tsteps: int, n: int) -> dict:
    """Uniform random A and B (n, n)."""
    rng = np.random.default_rng(42)
    return {"tsteps": tsteps, "A": rng.random((n, n)), "B": rng.random((n, n))}


def jacobi_2d(tsteps, A, B):
    for t in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
