"""The `repoos` NetworkX backend: what NetworkX's dispatcher loads through the `networkx.backends` entry point.

`nx.pagerank(G, backend="repoos")`, or any call with `NETWORKX_BACKEND_PRIORITY=repoos` (the older
`NETWORKX_AUTOMATIC_BACKENDS` too), converts `G` with `convert_from_nx` (cached on `G` by the
dispatcher) and calls the method of the algorithm's name here. What is not here, or what
`can_run` declines, NetworkX runs itself: the dispatcher's rules decide, never a guess of ours.
"""

from __future__ import annotations

from repoos_agent.graphs import algorithms
from repoos_agent.graphs.csr import CsrGraph, from_networkx

IMPLEMENTED = {
    "pagerank": "power iterations by the compiled pull kernel; personalization, nstart, dangling and weights supported",
    "degree_centrality": "degrees from row pointers and a compiled scatter over the edges",
    "connected_components": "compiled label propagation to each component's smallest node",
    "single_source_shortest_path_length": "compiled BFS relaxation sweeps over the in-neighbours",
    "triangles": "compiled neighbour marking over the simple symmetric adjacency",
}


class BackendInterface:
    """NetworkX's backend protocol: conversions, `can_run`/`should_run`, and one method per algorithm."""

    @staticmethod
    def convert_from_nx(
        G,
        edge_attrs=None,
        node_attrs=None,
        preserve_edge_attrs=False,
        preserve_node_attrs=False,
        preserve_graph_attrs=False,
        name=None,
        graph_name=None,
    ) -> CsrGraph:
        """CSR arrays of `G` with the one numeric edge attribute the algorithm reads (NetworkX names it
        in `edge_attrs`, with its default). Anything else the call would need is declined."""
        if preserve_edge_attrs or preserve_node_attrs or node_attrs:
            raise NotImplementedError("the repoos backend keeps one numeric edge attribute, no node attributes")
        weight, default = None, 1.0
        if edge_attrs:
            if len(edge_attrs) != 1:
                raise NotImplementedError("the repoos backend keeps one edge attribute")
            ((weight, default),) = edge_attrs.items()
            default = 1.0 if default is None else default
        return from_networkx(G, weight, default)

    @staticmethod
    def convert_to_nx(obj, *, name=None):
        """Results are NetworkX's types already (dicts, sets, numbers); a graph is not returned by any algorithm here."""
        return obj

    @staticmethod
    def can_run(name, args, kwargs) -> bool | str:
        if name not in IMPLEMENTED:
            return f"`{name}` is not implemented by repoos"
        return True

    @staticmethod
    def should_run(name, args, kwargs) -> bool | str:
        return True

    @staticmethod
    def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None, weight="weight", dangling=None):
        if weight is not None and weight != G.weight_attribute:
            raise NotImplementedError(f"this conversion holds edge attribute `{G.weight_attribute}`, not `{weight}`")
        return algorithms.pagerank(G, alpha, personalization, max_iter, tol, nstart, dangling, weighted=weight is not None)

    @staticmethod
    def degree_centrality(G):
        return algorithms.degree_centrality(G)

    @staticmethod
    def connected_components(G):
        return algorithms.connected_components(G)

    @staticmethod
    def single_source_shortest_path_length(G, source, cutoff=None):
        return algorithms.single_source_shortest_path_length(G, source, cutoff)

    @staticmethod
    def triangles(G, nodes=None):
        return algorithms.triangles(G, nodes)


def backend_info() -> dict:
    """What `networkx.backend_info` reads: the backend's name, project and the algorithms it runs."""
    return {
        "backend_name": "repoos",
        "project": "repoos-agent",
        "package": "repoos_agent",
        "url": "https://pypi.org/project/repoos-agent/",
        "short_summary": "NetworkX algorithms as compiled, proven CSR kernels",
        "functions": {name: {"additional_docs": text} for name, text in IMPLEMENTED.items()},
        "default_config": {},
    }
