"""pagerank: power iterations of PageRank in pull form, as NetworkX defines it.

`rowptr`/`col` list each node's in-neighbours; `weight[k]` is that edge's weight over its
source's total out-weight. Rank that dangling nodes (`dangling[i] = 1`, no out-edges) would
lose is handed out by `dangling_weights`; `teleport` is the personalization vector. Each
iteration leaves in `err[0]` the L1 change of that iteration, which the caller tests against
NetworkX's tolerance between calls."""

import numpy as np

from kernels.graphs._csr import csr, random_edges
from kernels.graphs._sizes import GRAPH_SIZES

NAME = "pagerank"
CATEGORY = "graphs"
SIZES = GRAPH_SIZES


def init(n: int, m: int) -> dict:
    """A random power-law digraph's in-edge CSR, uniform teleport and dangling weights, x = 1/n."""
    src, dst = random_edges(n, m, seed=11)
    by_target = np.lexsort((src, dst))
    rowptr, col = csr(n, dst[by_target], src[by_target])
    out = np.bincount(src, minlength=n).astype(np.float64)
    weight = 1.0 / out[col]
    uniform = np.full(n, 1.0 / n)
    return {
        "n": n,
        "iterations": 4,
        "alpha": 0.85,
        "rowptr": rowptr,
        "col": col,
        "weight": weight,
        "dangling": (out == 0).astype(np.float64),
        "dangling_weights": uniform.copy(),
        "teleport": uniform.copy(),
        "x": uniform.copy(),
        "y": np.zeros(n),
        "err": np.zeros(1),
    }


def pagerank(n, iterations, alpha, rowptr, col, weight, dangling, dangling_weights, teleport, x, y, err):
    for t in range(iterations):
        lost = 0.0
        for i in range(n):
            lost += x[i] * dangling[i]
        for i in range(n):
            s = 0.0
            for k in range(rowptr[i], rowptr[i + 1]):
                s += weight[k] * x[col[k]]
            y[i] = alpha * (s + lost * dangling_weights[i]) + (1.0 - alpha) * teleport[i]
        err[0] = 0.0
        for i in range(n):
            err[0] += abs(y[i] - x[i])
            x[i] = y[i]
