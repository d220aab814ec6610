"""A NetworkX graph as CSR arrays: what the backend's algorithms read, built once per graph.

NetworkX's dispatcher caches the converted graph on the NetworkX graph (`G.__networkx_cache__`,
keyed by the edge attribute asked for) and drops it when the graph is changed through its own
methods, so the conversion is paid once per graph and edge attribute. Arrays derived for one
algorithm (the transpose for pull-style iterations, the simple symmetric adjacency for
triangles) are cached on the `CsrGraph` itself, for the same lifetime."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from numbers import Real

import numpy as np


@dataclass(frozen=True)
class Csr:
    """Row pointers, column indices and one weight per entry; repeated columns are parallel edges."""

    rowptr: np.ndarray
    col: np.ndarray
    weight: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.rowptr) - 1

    def sources(self) -> np.ndarray:
        """The row of every entry."""
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.rowptr))

    def transposed(self) -> Csr:
        """Each column's entries as a row: in-neighbours from out-neighbours."""
        order = np.argsort(self.col, kind="stable")
        rowptr = np.zeros(self.rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.col, minlength=self.rows), out=rowptr[1:])
        return Csr(rowptr, self.sources()[order], self.weight[order])


@dataclass(eq=False)
class CsrGraph:
    """The backend's graph: the nodes in NetworkX's order, the out-adjacency as CSR (both directions
    for an undirected graph, a self-loop once), and the weight attribute it was built with."""

    nodes: list
    out: Csr
    directed: bool
    multigraph: bool
    weight_attribute: str | None
    graph: dict = field(default_factory=dict)
    _pulls: dict = field(default_factory=dict, repr=False)
    __networkx_backend__ = "repoos"

    def __len__(self) -> int:
        return len(self.nodes)

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return self.multigraph

    @cached_property
    def index(self) -> dict:
        return {node: position for position, node in enumerate(self.nodes)}

    @cached_property
    def incoming(self) -> Csr:
        """In-neighbours of every node (the out-adjacency itself when undirected)."""
        return self.transpose if self.directed else self.out

    @cached_property
    def transpose(self) -> Csr:
        """In-neighbours of every node, with the weights: what a pull iteration reads (undirected too)."""
        return self.out.transposed()

    def pull(self, weighted: bool) -> tuple[Csr, np.ndarray]:
        """The in-adjacency with each entry's weight over its source's out-weight (1 per edge unless
        `weighted`), and each node's out-weight: PageRank's transition matrix, built once per graph."""
        if weighted not in self._pulls:
            transpose = self.transpose
            weights = transpose.weight if weighted else np.ones(len(transpose.col))
            out_weight = np.bincount(transpose.col, weights=weights, minlength=len(self.nodes))
            scale = np.divide(1.0, out_weight, out=np.zeros(len(self.nodes)), where=out_weight != 0)
            self._pulls[weighted] = (Csr(transpose.rowptr, transpose.col, weights * scale[transpose.col]), out_weight)
        return self._pulls[weighted]

    @cached_property
    def self_loops(self) -> np.ndarray:
        """How many self-loops each node has."""
        loops = self.out.sources() == self.out.col
        return np.bincount(self.out.col[loops], minlength=len(self.nodes)).astype(np.int64)

    @cached_property
    def simple_symmetric(self) -> Csr:
        """The undirected simple graph: no self-loops, each neighbour once (for triangles)."""
        src, dst = self.out.sources(), self.out.col
        keep = src != dst
        if not self.directed and not self.multigraph:
            # A Graph's adjacency holds each neighbour once already: only the self-loops go.
            rowptr = np.zeros(len(self.nodes) + 1, dtype=np.int64)
            np.cumsum(np.bincount(src[keep], minlength=len(self.nodes)), out=rowptr[1:])
            return Csr(rowptr, dst[keep], np.ones(int(keep.sum())))
        pairs = np.unique(np.stack([src[keep], dst[keep]], 1), axis=0) if keep.any() else np.zeros((0, 2), np.int64)
        rowptr = np.zeros(len(self.nodes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs[:, 0], minlength=len(self.nodes)), out=rowptr[1:])
        return Csr(rowptr, pairs[:, 1].astype(np.int64), np.ones(len(pairs)))


class UnsupportedGraph(NotImplementedError):
    """A graph the backend does not convert (a non-numeric weight): NetworkX runs instead."""


def from_networkx(G, weight: str | None = None, default: float = 1.0) -> CsrGraph:
    """Read `G`'s adjacency (`G._adj`, successors for a digraph) into CSR, in NetworkX's node order.

    A multigraph's parallel edges become repeated entries, each with its own weight. Iterating the
    adjacency dicts is the whole cost (NetworkX's own `to_scipy_sparse_array` does the same)."""
    nodes = list(G)
    index = {node: position for position, node in enumerate(nodes)}
    adjacency = G._adj
    multigraph = G.is_multigraph()
    if multigraph:
        counts = np.fromiter((sum(len(keys) for keys in nbrs.values()) for nbrs in adjacency.values()), np.int64, len(nodes))
        targets = (index[v] for nbrs in adjacency.values() for v, keys in nbrs.items() for _ in keys)
        datas = (data for nbrs in adjacency.values() for keys in nbrs.values() for data in keys.values())
    else:
        counts = np.fromiter(map(len, adjacency.values()), np.int64, len(nodes))
        targets = (index[v] for nbrs in adjacency.values() for v in nbrs)
        datas = (data for nbrs in adjacency.values() for data in nbrs.values())
    rowptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(counts, out=rowptr[1:])
    entries = int(rowptr[-1])
    col = np.fromiter(targets, np.int64, entries)
    if weight is None:
        weights = np.ones(entries)
    else:
        values = [data.get(weight, default) for data in datas]
        if not all(issubclass(kind, Real) for kind in set(map(type, values))):
            raise UnsupportedGraph(f"edge attribute `{weight}` holds values that are not real numbers")
        weights = np.fromiter(values, np.float64, entries)
    return CsrGraph(nodes, Csr(rowptr, col, weights), G.is_directed(), multigraph, weight, dict(G.graph))
