"""Seeded random graphs as CSR arrays, for the sparse and graph kernels' inputs.

The degrees follow a power law (Chung-Lu: each edge's endpoints drawn in proportion to a
weight `(i + 1) ** -0.8`, then shuffled), so a few hubs meet many leaves, as in real graphs.
Self-loops and repeated pairs are kept: kernels must handle them. The last `n // 20` nodes
get no out-edges, so PageRank meets dangling nodes."""

from __future__ import annotations

import numpy as np


def random_edges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`m` directed edges `(src, dst)` over `n` nodes, sorted by source then target."""
    rng = np.random.default_rng(seed)
    weight = (np.arange(n) + 1.0) ** -0.8
    order = rng.permutation(n)
    probability = weight[order] / weight.sum()
    src = rng.choice(n, size=m, p=probability)
    dst = rng.choice(n, size=m, p=probability)
    keep = src < n - max(1, n // 20)
    src, dst = src[keep], dst[keep]
    by_source = np.lexsort((dst, src))
    return src[by_source].astype(np.int64), dst[by_source].astype(np.int64)


def csr(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and column indices of the edges, which must be sorted by source."""
    rowptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=rowptr[1:])
    return rowptr, dst.astype(np.int64)


def symmetric(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both directions of every edge, repeated pairs merged, self-loops dropped: an undirected graph's CSR."""
    pairs = np.unique(np.concatenate([np.stack([src, dst], 1), np.stack([dst, src], 1)]), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return csr(n, pairs[:, 0], pairs[:, 1])
