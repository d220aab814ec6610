"""lennard-jones: Lennard-Jones energy summed over the upper triangle of particle pairs."""

import numpy as np

NAME = "lennard-jones"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 600},
    "LARGE": {"n": 2500},
    "EXTRALARGE": {"n": 5000},
}


def init(n: int) -> dict:
    """Particles in a unit box, float64 (n, 3)."""
    rng = np.random.default_rng(42)
    return {"pos": rng.random((n, 3)) * 4.0}


def lennard_jones(pos):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz + 0.25
            inv6 = 1.0 / (r2 * r2 * r2)
            energy += 4.0 * (inv6 * inv6 - inv6)
    return energy
