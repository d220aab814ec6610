"""laplace-swap: Jacobi relaxation of a grid, double-buffered by swapping the two arrays' names at every step."""

import numpy as np

NAME = "laplace-swap"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 16, "steps": 5},
    "SMALL": {"n": 64, "steps": 11},
    "MEDIUM": {"n": 256, "steps": 51},
    "LARGE": {"n": 1024, "steps": 51},
    "EXTRALARGE": {"n": 2048, "steps": 101},
}


def init(n: int, steps: int) -> dict:
    """A grid with a hot top edge."""
    rng = np.random.default_rng(42)
    u = 0.01 * rng.random((n, n))
    u[0, :] = 1.0
    return {"u": u, "steps": steps}


def laplace_swap(u, steps):
    new = u.copy()
    old = u.copy()
    for it in range(steps):
        new[1:-1, 1:-1] = 0.25 * (old[:-2, 1:-1] + old[2:, 1:-1] + old[1:-1, :-2] + old[1:-1, 2:])
        old, new = new, old
    return old
