"""floyd-warshall: all-pairs shortest path lengths, updated in place. PolyBench/C 4.2.1, medley."""

import numpy as np

NAME = "floyd-warshall"
CATEGORY = "medley"
SIZES = {
    "MINI": {"n": 60},
    "SMALL": {"n": 180},
    "MEDIUM": {"n": 500},
    "LARGE": {"n": 2800},
    "EXTRALARGE": {"n": 5600},
}


def init(n: int) -> dict:
    """PolyBench's init_array (int32): path[i][j] = i*j % 7 + 1, or 999 where (i+j) is a
    multiple of 13, 7 or 11."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    path = (i * j % 7 + 1).astype(np.int32)
    path[((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)] = 999
    return {"n": n, "path": path}


def floyd_warshall(n, path):
    for k in range(n):
        for i in range(n):
            for j in range(n):
                path[i, j] = path[i, j] if path[i, j] < path[i, k] + path[k, j] else path[i, k] + path[k, j]
