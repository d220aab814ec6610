"""3mm: G := (A@B)@(C@D), a new array. Modelled on PolyBench's 3mm, written with `@`."""

import numpy as np

NAME = "3mm"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"ni": 16, "nj": 18, "nk": 20, "nl": 22, "nm": 24},
    "SMALL": {"ni": 40, "nj": 50, "nk": 60, "nl": 70, "nm": 80},
    "MEDIUM": {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220},
    "LARGE": {"ni": 1600, "nj": 1800, "nk": 2000, "nl": 2200, "nm": 2400},
    "EXTRALARGE": {"ni": 2500, "nj": 2800, "nk": 3200, "nl": 3500, "nm": 3800},
}


def init(ni: int, nj: int, nk: int, nl: int, nm: int) -> dict:
    """Uniform random A (ni, nk), B (nk, nj), C (nj, nm), D (nm, nl)."""
    rng = np.random.default_rng(42)
    return {
        "A": rng.random((ni, nk)),
        "B": rng.random((nk, nj)),
        "C": rng.random((nj, nm)),
        "D": rng.random((nm, nl)),
    }


def k3mm(A, B, C, D):
    E = A @ B
    F = C @ D
    return E @ F
