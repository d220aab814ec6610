"""wave-1d-unpacked: a leapfrog 1-d wave equation, its constants unpacked from a tuple."""

import numpy as np

NAME = "wave-1d-unpacked"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 32, "steps": 8},
    "SMALL": {"n": 512, "steps": 40},
    "MEDIUM": {"n": 20000, "steps": 100},
    "LARGE": {"n": 200000, "steps": 200},
    "EXTRALARGE": {"n": 400000, "steps": 400},
}


def init(n: int, steps: int) -> dict:
    """A bump in the middle of a string at rest."""
    x = np.linspace(0.0, 1.0, n)
    u = np.exp(-200.0 * (x - 0.5) ** 2)
    return {"u": u, "u_prev": u.copy(), "steps": steps}


def wave_1d_unpacked(u, u_prev, steps):
    c, dt = 1.0, 0.5
    u_next = np.zeros_like(u)
    for t in range(steps):
        u_next[1:-1] = 2.0 * u[1:-1] - u_prev[1:-1] + (c * dt) ** 2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u_prev[:] = u
        u[:] = u_next
    return u
