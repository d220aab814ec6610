"""spmv: y := A @ x for a CSR matrix A (row pointers, column indices, values)."""

import numpy as np

from kernels.graphs._csr import csr, random_edges
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "spmv"
CATEGORY = "sparse"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A random power-law matrix with `m` entries (repeats and diagonal kept), random values and x."""
    rowptr, col = csr(n, *random_edges(n, m, seed=7))
    rng = np.random.default_rng(8)
    return {
        "n": n,
        "rowptr": rowptr,
        "col": col,
        "val": rng.uniform(0.5, 1.5, len(col)),
        "x": rng.uniform(0.5, 1.5, n),
        "y": np.zeros(n),
    }


def spmv(n, rowptr, col, val, x, y):
    for i in range(n):
        y[i] = 0.0
        for k in range(rowptr[i], rowptr[i + 1]):
            y[i] += val[k] * x[col[k]]
