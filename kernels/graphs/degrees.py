"""degrees: each node's out-degree from the row pointers and in-degree by a scatter over the edges."""

import numpy as np

from kernels.graphs._csr import csr, random_edges
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "degrees"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A random power-law digraph's CSR."""
    rowptr, col = csr(n, *random_edges(n, m, seed=23))
    return {
        "n": n,
        "m": len(col),
        "rowptr": rowptr,
        "col": col,
        "out_degree": np.zeros(n, dtype=np.int64),
        "in_degree": np.zeros(n, dtype=np.int64),
    }


def degrees(n, m, rowptr, col, out_degree, in_degree):
    for v in range(n):
        out_degree[v] = rowptr[v + 1] - rowptr[v]
        in_degree[v] = 0
    for k in range(m):
        in_degree[col[k]] += 1
