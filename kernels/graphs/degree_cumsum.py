"""degree-cumsum: the degree distribution (how many nodes have each degree) and its cumulative sum."""

import numpy as np

from kernels.graphs._csr import csr, random_edges
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "degree-cumsum"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """The out-degrees of a random power-law digraph."""
    rowptr, _ = csr(n, *random_edges(n, m, seed=29))
    degree = np.diff(rowptr)
    top = int(degree.max())
    return {
        "n": n,
        "top": top,
        "degree": degree,
        "hist": np.zeros(top + 1, dtype=np.int64),
        "cumulative": np.zeros(top + 1, dtype=np.int64),
    }


def degree_cumsum(n, top, degree, hist, cumulative):
    for d in range(top + 1):
        hist[d] = 0
    for v in range(n):
        hist[degree[v]] += 1
    cumulative[0] = hist[0]
    for d in range(1, top + 1):
        cumulative[d] = cumulative[d - 1] + hist[d]
