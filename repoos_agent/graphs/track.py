"""The graph track's registration (`repoos_agent.tracks`).

NetworkX's dispatcher reaches it (`nx.pagerank(G, backend="repoos")`, through the `networkx.backends` entry
point), not the front ends: it claims no function of a user's file, and its kernels are the bundled ones of
`kernels/graphs/`, benched and swapped as every loop kernel is."""

from repoos_agent.tracks import Track

TRACK = Track(name="graphs")
