"""The graph track: NetworkX algorithms served by compiled, proven CSR kernels.

`backend` is what NetworkX's dispatcher loads (`nx.pagerank(G, backend="repoos")`); `csr`
converts a NetworkX graph once into arrays; `compiled` builds the bundled kernels of
`kernels/graphs/` through the same engine as every other kernel; `algorithms` drives them
with NetworkX's semantics (tolerances, personalization, directedness, error types)."""
