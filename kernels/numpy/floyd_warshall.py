"""floyd-warshall: all-pairs shortest paths, a whole-matrix relaxation per vertex, in place. Modelled on PolyBench's."""

import numpy as np

NAME = "floyd-warshall"
CATEGORY = "medley"
SIZES = {
    "MINI": {"n": 60},
    "SMALL": {"n": 180},
    "MEDIUM": {"n": 500},
    "LARGE": {"n": 600},
    "EXTRALARGE": {"n": 950},
}


def init(n: int) -> dict:
    """Random edge lengths in [1, 100) between every pair of vertices, 0 from a vertex to itself."""
    rng = np.random.default_rng(42)
    path = rng.uniform(1.0, 100.0, (n, n))
    np.fill_diagonal(path, 0.0)
    return {"path": path}


def floyd_warshall(path):
    n = path.shape[0]
    for k in range(n):
        path[:] = np.minimum(path, path[:, k, None] + path[None, k, :])
