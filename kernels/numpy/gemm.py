"""gemm: C := alpha*A@B + beta*C, in place. Modelled on PolyBench's gemm, written with `@`."""

import numpy as np

NAME = "gemm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"ni": 20, "nj": 25, "nk": 30},
    "SMALL": {"ni": 60, "nj": 70, "nk": 80},
    "MEDIUM": {"ni": 200, "nj": 220, "nk": 240},
    "LARGE": {"ni": 2000, "nj": 2300, "nk": 2600},
    "EXTRALARGE": {"ni": 3200, "nj": 3600, "nk": 4100},
}


def init(ni: int, nj: int, nk: int) -> dict:
    """Uniform random A (ni, nk), B (nk, nj), C (ni, nj) in [0, 1); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {
        "alpha": 1.5,
        "beta": 1.2,
        "C": rng.random((ni, nj)),
        "A": rng.random((ni, nk)),
        "B": rng.random((nk, nj)),
    }


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C
