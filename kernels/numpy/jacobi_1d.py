"""jacobi-1d: 1-D Jacobi stencil, 3-point average alternating between A and B, in place. Modelled on PolyBench's jacobi-1d."""

import numpy as np

NAME = "jacobi-1d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 30},
    "SMALL": {"tsteps": 40, "n": 120},
    "MEDIUM": {"tsteps": 100, "n": 400},
    "LARGE": {"tsteps": 1000, "n": 100000},
    "EXTRALARGE": {"tsteps": 2000, "n": 200000},
}


def init(tsteps: int, n: int) -> dict:
    """Uniform random A and B (n,)."""
    rng = np.random.default_rng(42)
    return {"tsteps": tsteps, "A": rng.random(n), "B": rng.random(n)}


def jacobi_1d(tsteps, A, B):
    for t in range(tsteps):
        B[1:-1] = (A[:-2] + A[1:-1] + A[2:]) / 3.0
        A[1:-1] = (B[:-2] + B[1:-1] + B[2:]) / 3.0
