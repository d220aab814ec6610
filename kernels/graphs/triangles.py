"""triangles: how many triangles pass through each node of an undirected graph.

`rowptr`/`col` are its symmetric CSR without self-loops. For each node u, its neighbours are
marked with `u + 1`; each neighbour's neighbours that carry the mark close a triangle, seen
once from each side, so `count[u]` ends at twice the triangles through u."""

import numpy as np

from kernels.graphs._csr import random_edges, symmetric
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "triangles"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A random power-law undirected graph."""
    rowptr, col = symmetric(n, *random_edges(n, m // 2, seed=19))
    return {"n": n, "rowptr": rowptr, "col": col, "mark": np.zeros(n, dtype=np.int64), "count": np.zeros(n, dtype=np.int64)}


def triangles(n, rowptr, col, mark, count):
    for u in range(n):
        for k in range(rowptr[u], rowptr[u + 1]):
            mark[col[k]] = u + 1
        count[u] = 0
        for k in range(rowptr[u], rowptr[u + 1]):
            for j in range(rowptr[col[k]], rowptr[col[k] + 1]):
                count[u] += mark[col[j]] == u + 1
