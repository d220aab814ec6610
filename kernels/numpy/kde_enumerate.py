"""kde-enumerate: Gaussian kernel density estimate on a grid, the grid's points taken with `enumerate`."""

import math

import numpy as np

NAME = "kde-enumerate"
CATEGORY = "as-written"
SIZES = {
    "MINI": {"m": 20, "g": 16},
    "SMALL": {"m": 200, "g": 100},
    "MEDIUM": {"m": 2000, "g": 500},
    "LARGE": {"m": 10000, "g": 2000},
    "EXTRALARGE": {"m": 20000, "g": 4000},
}


def init(m: int, g: int) -> dict:
    """Normal samples and an even grid over them."""
    rng = np.random.default_rng(42)
    return {"samples": rng.standard_normal(m), "grid": np.linspace(-3.0, 3.0, g), "bandwidth": 0.4}


def kde_enumerate(samples, grid, bandwidth):
    density = np.zeros_like(grid)
    for i, point in enumerate(grid):
        z = (samples - point) / bandwidth
        density[i] = np.sum(np.exp(-0.5 * z * z))
    return density / (len(samples) * bandwidth * math.sqrt(2.0 * math.pi))
