"""bfs_levels: every node's distance from the sources, by sweeps of `level[v] = min(level[v], level[u] + 1)`.

`rowptr`/`col` list each node's in-neighbours. Unreached nodes hold `n`. Each sweep updates in
place (Gauss-Seidel), so distances settle in at most as many sweeps as the longest shortest
path; `changed[0]` counts the nodes the last sweep lowered, and the caller stops at zero."""

import numpy as np

from kernels.graphs._csr import csr, random_edges
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "bfs-levels"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A random power-law digraph's in-edge CSR, node 0 the source."""
    src, dst = random_edges(n, m, seed=13)
    by_target = np.lexsort((src, dst))
    rowptr, col = csr(n, dst[by_target], src[by_target])
    level = np.full(n, n, dtype=np.int64)
    level[0] = 0
    return {
        "n": n,
        "sweeps": 2,
        "rowptr": rowptr,
        "col": col,
        "level": level,
        "old": np.zeros(n, dtype=np.int64),
        "changed": np.zeros(1, dtype=np.int64),
    }


def bfs_levels(n, sweeps, rowptr, col, level, old, changed):
    for t in range(sweeps):
        for v in range(n):
            old[v] = level[v]
        for v in range(n):
            for k in range(rowptr[v], rowptr[v + 1]):
                level[v] = min(level[v], level[col[k]] + 1)
        changed[0] = 0
        for v in range(n):
            changed[0] += level[v] != old[v]
