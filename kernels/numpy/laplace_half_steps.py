"""laplace-half-steps: double-buffered Laplace relaxation, the two buffers' roles exchanged every half step."""

import numpy as np

NAME = "laplace-half-steps"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 16, "steps": 4},
    "SMALL": {"n": 64, "steps": 10},
    "MEDIUM": {"n": 256, "steps": 50},
    "LARGE": {"n": 1024, "steps": 50},
    "EXTRALARGE": {"n": 2048, "steps": 100},
}


def init(n: int, steps: int) -> dict:
    """A grid with a hot top edge, zero elsewhere."""
    rng = np.random.default_rng(42)
    u = np.zeros((n, n))
    u[0, :] = 1.0
    return {"u": u + 0.01 * rng.random((n, n)), "steps": steps}


def laplace_half_steps(u, steps):
    a = u.copy()
    b = u.copy()
    for it in range(steps):
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a[1:-1, 1:-1] = 0.25 * (b[:-2, 1:-1] + b[2:, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:])
    return a
