"""2mm: D := alpha*A@B@C + beta*D, in place. Modelled on PolyBench's 2mm, written with `@`."""

import numpy as np

NAME = "2mm"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"ni": 16, "nj": 18, "nk": 22, "nl": 24},
    "SMALL": {"ni": 40, "nj": 50, "nk": 70, "nl": 80},
    "MEDIUM": {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
    "LARGE": {"ni": 1600, "nj": 1800, "nk": 2200, "nl": 2400},
    "EXTRALARGE": {"ni": 2500, "nj": 2800, "nk": 3500, "nl": 3800},
}


def init(ni: int, nj: int, nk: int, nl: int) -> dict:
    """Uniform random A (ni, nk), B (nk, nj), C (nj, nl), D (ni, nl); alpha 1.5, beta 1.2."""
    rng = np.random.default_rng(42)
    return {
        "alpha": 1.5,
        "beta": 1.2,
        "A": rng.random((ni, nk)),
        "B": rng.random((nk, nj)),
        "C": rng.random((nj, nl)),
        "D": rng.random((ni, nl)),
    }


def k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D
