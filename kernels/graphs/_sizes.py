"""The graph sizes of the sparse and graph kernels: nodes and edges per size class."""

GRAPH_SIZES = {
    "MINI": {"n": 40, "m": 160},
    "SMALL": {"n": 400, "m": 2_000},
    "MEDIUM": {"n": 4_000, "m": 40_000},
    "LARGE": {"n": 20_000, "m": 200_000},
    "EXTRALARGE": {"n": 100_000, "m": 1_000_000},
}
