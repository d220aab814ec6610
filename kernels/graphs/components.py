"""components: connected components by label propagation, `label[v] = min(label[v], label[u])` over neighbours.

`rowptr`/`col` are an undirected graph's symmetric CSR. Labels start as the node numbers; at
the fixed point each node holds the smallest node number of its component. `changed[0]` counts
the labels the last sweep lowered, and the caller stops at zero."""

import numpy as np

from kernels.graphs._csr import random_edges, symmetric
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "components"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A sparse random undirected graph (a few edges a node, so it falls into several components)."""
    rowptr, col = symmetric(n, *random_edges(n, max(1, m // 8), seed=17))
    return {
        "n": n,
        "sweeps": 2,
        "rowptr": rowptr,
        "col": col,
        "label": np.arange(n, dtype=np.int64),
        "old": np.zeros(n, dtype=np.int64),
        "changed": np.zeros(1, dtype=np.int64),
    }


def components(n, sweeps, rowptr, col, label, old, changed):
    for t in range(sweeps):
        for v in range(n):
            old[v] = label[v]
        for v in range(n):
            for k in range(rowptr[v], rowptr[v + 1]):
                label[v] = min(label[v], label[col[k]])
        changed[0] = 0
        for v in range(n):
            changed[0] += label[v] != old[v]
