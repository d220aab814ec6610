"""heat-3d: explicit 3-D heat equation, 7-point stencil alternating between A and B, in place. Modelled on PolyBench's heat-3d."""

import numpy as np

NAME = "heat-3d"
CATEGORY = "stencils"
SIZES = {
    "MINI": {"tsteps": 20, "n": 10},
    "SMALL": {"tsteps": 40, "n": 20},
    "MEDIUM": {"tsteps": 100, "n": 40},
    "LARGE": {"tsteps": 40, "n": 80},
    "EXTRALARGE": {"tsteps": 80, "n": 100},
}


def init(tsteps: int, n: int) -> dict:
    """Uniform random A and B (n, n, n)."""
    rng = np.random.default_rng(42)
    return {"tsteps": tsteps, "A": rng.random((n, n, n)), "B": rng.random((n, n, n))}


def heat_3d(tsteps, A, B):
    for t in range(tsteps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1]
        )
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1]
        )
