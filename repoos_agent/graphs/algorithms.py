"""NetworkX's algorithms, computed by the compiled graph kernels with NetworkX's semantics.

Each function takes a `CsrGraph` and NetworkX's own arguments, calls one kernel in place on
arrays, and shapes the result as NetworkX does (dicts keyed by node, a generator of sets). The
iterative ones run a fixed number of iterations per call and test NetworkX's stopping rule
between calls: the kernel's loops have static trip counts, the stop is data."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import networkx as nx
import numpy as np

from repoos_agent.graphs.compiled import graph_kernel
from repoos_agent.graphs.csr import CsrGraph

PAGERANK_CHUNK = 4
"""Power iterations per kernel call. NetworkX stops at the first iteration whose L1 change is below
`N * tol`; testing every 4th overshoots by at most 3 iterations, which only brings the answer
closer to the fixed point, and keeps the index check (one pass over the edges) off every iteration."""
SWEEPS = 2
"""Relaxation sweeps per call of the BFS and component kernels; they stop when a sweep changes nothing."""


def pagerank(
    graph: CsrGraph,
    alpha: float = 0.85,
    personalization: Mapping | None = None,
    max_iter: int = 100,
    tol: float = 1.0e-6,
    nstart: Mapping | None = None,
    dangling: Mapping | None = None,
    weighted: bool = True,
) -> dict:
    """`nx.pagerank`: power iterations of `alpha * (x Q + dangling mass) + (1 - alpha) p`; every edge
    weighs 1 unless `weighted` (the graph's weights were converted from the attribute asked for)."""
    n = len(graph)
    if n == 0:
        return {}
    incoming, out_weight = graph.pull(weighted)
    teleport = _distribution(graph, personalization, "personalization") if personalization is not None else np.full(n, 1.0 / n)
    x = _distribution(graph, nstart, "nstart") if nstart is not None else np.full(n, 1.0 / n)
    values = {
        "n": n,
        "iterations": 0,
        "alpha": float(alpha),
        "rowptr": incoming.rowptr,
        "col": incoming.col,
        "weight": incoming.weight,
        "dangling": (out_weight == 0).astype(np.float64),
        "dangling_weights": _distribution(graph, dangling, "dangling") if dangling is not None else teleport,
        "teleport": teleport,
        "x": x,
        "y": np.zeros(n),
        "err": np.zeros(1),
    }
    kernel = graph_kernel("graphs:pagerank")
    done = 0
    while done < max_iter:
        values["iterations"] = min(PAGERANK_CHUNK, max_iter - done)
        kernel(values)
        done += values["iterations"]
        if values["err"][0] < n * tol:
            return dict(zip(graph.nodes, values["x"].tolist(), strict=True))
    raise nx.PowerIterationFailedConvergence(max_iter)


def _distribution(graph: CsrGraph, weights: Mapping, what: str) -> np.ndarray:
    """A node-keyed dict as a vector in node order, normalized to sum 1 (nodes missing count 0), as NetworkX does."""
    vector = np.array([weights.get(node, 0) for node in graph.nodes], dtype=np.float64)
    total = vector.sum()
    if total == 0:
        raise ZeroDivisionError(f"{what} sums to zero")
    return vector / total


def degrees(graph: CsrGraph) -> np.ndarray:
    """Each node's degree as `G.degree` counts it: a self-loop twice, parallel edges each."""
    n = len(graph)
    out = graph.out
    values = {
        "n": n,
        "m": len(out.col),
        "rowptr": out.rowptr,
        "col": out.col,
        "out_degree": np.zeros(n, dtype=np.int64),
        "in_degree": np.zeros(n, dtype=np.int64),
    }
    graph_kernel("graphs:degrees")(values)
    if graph.directed:
        return values["out_degree"] + values["in_degree"]
    return values["out_degree"] + graph.self_loops


def degree_centrality(graph: CsrGraph) -> dict:
    """`nx.degree_centrality`: degree over n - 1 (1 for every node of a graph of one node or none)."""
    n = len(graph)
    if n <= 1:
        return dict.fromkeys(graph.nodes, 1)
    centrality = degrees(graph) * (1.0 / (n - 1.0))
    return dict(zip(graph.nodes, centrality.tolist(), strict=True))


def _relaxed(graph: CsrGraph, name: str, field: str, start: np.ndarray) -> np.ndarray:
    """Sweep kernel `name` over the in-adjacency until a sweep lowers nothing."""
    incoming = graph.incoming
    n = len(graph)
    values = {
        "n": n,
        "sweeps": SWEEPS,
        "rowptr": incoming.rowptr,
        "col": incoming.col,
        field: start,
        "old": np.zeros(n, dtype=np.int64),
        "changed": np.ones(1, dtype=np.int64),
    }
    kernel = graph_kernel(name)
    while values["changed"][0]:
        kernel(values)
    return values[field]


def connected_components(graph: CsrGraph) -> Iterator[set]:
    """`nx.connected_components`: label propagation to each component's smallest node number."""
    labels = _relaxed(graph, "graphs:components", "label", np.arange(len(graph), dtype=np.int64))
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]]) if len(order) else order
    nodes = graph.nodes
    for members in np.split(order, starts[1:]) if len(order) else []:
        yield {nodes[i] for i in members.tolist()}


def single_source_shortest_path_length(graph: CsrGraph, source, cutoff: int | None = None) -> dict:
    """`nx.single_source_shortest_path_length`: hop counts from `source`, nearest first, up to `cutoff`."""
    if source not in graph.index:
        raise nx.NodeNotFound(f"Source {source} is not in G")
    n = len(graph)
    start = np.full(n, n, dtype=np.int64)
    start[graph.index[source]] = 0
    level = _relaxed(graph, "graphs:bfs-levels", "level", start)
    reached = np.flatnonzero(level < (n if cutoff is None else min(n, cutoff + 1)))
    reached = reached[np.argsort(level[reached], kind="stable")]
    nodes = graph.nodes
    return {nodes[i]: d for i, d in zip(reached.tolist(), level[reached].tolist(), strict=True)}


def triangles(graph: CsrGraph, nodes=None) -> dict | int:
    """`nx.triangles`: triangles through each node (of `nodes`; one node gives its count alone)."""
    simple = graph.simple_symmetric
    n = len(graph)
    values = {
        "n": n,
        "rowptr": simple.rowptr,
        "col": simple.col,
        "mark": np.zeros(n, dtype=np.int64),
        "count": np.zeros(n, dtype=np.int64),
    }
    graph_kernel("graphs:triangles")(values)
    counts = (values["count"] // 2).tolist()
    if nodes is not None and _is_node(graph, nodes):
        return counts[graph.index[nodes]]
    wanted = graph.nodes if nodes is None else [node for node in nodes if node in graph.index]
    return {node: counts[graph.index[node]] for node in wanted}


def _is_node(graph: CsrGraph, candidate) -> bool:
    """`candidate in G` as NetworkX answers it: an unhashable container is not a node."""
    try:
        return candidate in graph.index
    except TypeError:
        return False
