"""The graph track against NetworkX and its peers: time and peak memory per algorithm, and spmv against SciPy.

Graphs: `nx.barabasi_albert_graph(n, 5, seed=42)`, scale-free and undirected, at 20,000 nodes
(about 100,000 edges) and at 200,000 nodes (about 1,000,000 edges). Every measurement runs in a
child process of its own, one at a time: the child loads the graph, converts it where the
peer's conversion is "excluded" (cached, as NetworkX's dispatcher keeps it on the graph), runs
the algorithm once to warm up (our kernels are built then) and times `--repeats` runs. Peak
memory is measured in another fresh child: it runs the algorithm on a 50-node graph first (to
load libraries and build kernels), converts the big graph where conversion is excluded, resets
the resident set's high-water mark (`/proc/self/clear_refs`) and runs once; the peak over the
resident size before that run is the algorithm's own. Every peer's answer is checked against NetworkX's (PageRank within NetworkX's
own stopping rule, an L1 distance below N * tol; the others exactly).

Peers: NetworkX itself (`backend="networkx"`; its PageRank runs SciPy), graphblas-algorithms
(`backend="graphblas"`, where it implements the algorithm), igraph (PageRank only, built from
the NetworkX graph with `Graph.from_networkx` where conversion is included) and ours
(`backend="repoos"`). spmv: our compiled CSR kernel on the machine's cores against
`scipy.sparse.csr_array @ x` on the 1M-edge graph's adjacency with random values.

Prints the tables and writes them to benchmarks/results/graphs.md.
Run: `.venv/bin/pip install -e '.[graphs,graph-peers]' && .venv/bin/python benchmarks/graphs.py [--repeats 5]`.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from report import write_results

GRAPHS = {"20k nodes": 20_000, "1M edges": 200_000}
ALGORITHMS = ("pagerank", "degree_centrality", "connected_components", "triangles", "single_source_shortest_path_length")
PEERS = ("networkx", "graphblas", "igraph", "repoos")
TOLERANCE = 1.0e-6


def make_graph(nodes: int):
    import networkx as nx

    return nx.barabasi_albert_graph(nodes, 5, seed=42)


def _call(peer: str, algorithm: str, G, igraph_graph=None):
    """One run of `algorithm` by `peer`, its answer as an array in node order (components: each node's
    smallest member)."""
    import networkx as nx

    if peer == "igraph":
        graph = igraph_graph if igraph_graph is not None else _igraph(G)
        return np.asarray(graph.pagerank(damping=0.85))
    args = (0,) if algorithm == "single_source_shortest_path_length" else ()
    result = getattr(nx, algorithm)(G, *args, backend=peer)
    nodes = list(G)
    if algorithm == "connected_components":
        smallest = np.empty(len(nodes), dtype=np.int64)
        for component in result:
            members = np.fromiter(component, np.int64)
            smallest[members] = members.min()
        return smallest
    return np.array([result.get(node, -1) for node in nodes], dtype=np.float64)


def _igraph(G):
    import igraph

    return igraph.Graph.from_networkx(G)


def child(spec: dict) -> dict:
    """Time (`measure: time`) or peak memory (`measure: memory`) of one peer's algorithm on one graph,
    in this fresh process."""
    import networkx as nx

    warnings.simplefilter("ignore")
    nx.config.warnings_to_ignore.add("cache")
    with open(spec["graph"], "rb") as handle:
        G = pickle.load(handle)
    peer, algorithm, cached = spec["peer"], spec["algorithm"], spec["conversion"] == "excluded"
    igraph_graph = _igraph(G) if peer == "igraph" and cached else None

    def run(graph=G, converted=igraph_graph):
        if not cached and peer in ("repoos", "graphblas"):
            graph.__networkx_cache__.clear()
        return _call(peer, algorithm, graph, converted)

    if spec["measure"] == "memory":
        # Libraries loaded and kernels built on a small graph first; the big graph's run is then the first
        # to allocate its arrays, so the heap holds no freed memory of earlier runs to reuse unseen.
        small = make_graph(50)
        run(small, _igraph(small) if peer == "igraph" and cached else None)
        if cached and peer in ("repoos", "graphblas"):
            _call(peer, "degree_centrality" if algorithm == "pagerank" else "pagerank", G)  # converts G and caches it
        before = _status("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")
        run()
        return {"peak_mb": max(_status("VmHWM") - before, 0) / 1024}
    np.save(spec["answer"], run())
    times = []
    for _ in range(spec["repeats"]):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"times": times}


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def spmv_child(spec: dict) -> dict:
    """Our spmv kernel against SciPy's CSR product, on the same matrix and vector, in one process."""
    import scipy.sparse

    from repoos_agent.graphs.compiled import graph_kernel

    with open(spec["graph"], "rb") as handle:
        G = pickle.load(handle)
    from repoos_agent.graphs.csr import from_networkx

    csr = from_networkx(G).out
    n = csr.rows
    rng = np.random.default_rng(5)
    val, x = rng.uniform(0.5, 1.5, len(csr.col)), rng.uniform(0.5, 1.5, n)
    matrix = scipy.sparse.csr_array((val, csr.col, csr.rowptr), shape=(n, n))
    values = {"n": n, "rowptr": csr.rowptr, "col": csr.col, "val": val, "x": x, "y": np.zeros(n)}
    kernel = graph_kernel("sparse:spmv")
    kernel(values)
    expected = matrix @ x
    assert np.allclose(values["y"], expected, rtol=1e-12), "spmv differs from SciPy"
    results = {}
    for name, run in (("scipy.sparse", lambda: matrix @ x), ("repoos", lambda: kernel(values))):
        run()
        times = []
        for _ in range(spec["repeats"] * 4):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        results[name] = times
    return results


def measure(spec: dict, role: str = "child") -> dict:
    """Run one child and read its JSON."""
    command = [sys.executable, __file__, f"--{role}", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _implemented(peer: str, algorithm: str) -> bool:
    if peer == "igraph":
        return algorithm == "pagerank"
    if peer == "graphblas":
        try:
            import graphblas_algorithms.interface
        except ImportError:
            return False
        return hasattr(graphblas_algorithms.interface.Dispatcher, algorithm)
    return True


def _median_spread(times: list[float]) -> tuple[float, float]:
    median = statistics.median(times)
    return median, (max(times) - min(times)) / 2 / median * 100


def _agrees(algorithm: str, answer: np.ndarray, reference: np.ndarray) -> bool:
    if algorithm == "pagerank":
        return float(np.abs(answer - reference).sum()) < len(reference) * TOLERANCE
    return bool(np.array_equal(answer, reference))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--child")
    parser.add_argument("--spmv-child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.spmv_child:
        print(json.dumps(spmv_child(json.loads(args.spmv_child))))
        return
    os.environ.setdefault("REPOOS_CACHE_DIR", tempfile.mkdtemp(prefix="repoos-bench-cache-"))
    workdir = Path(tempfile.mkdtemp(prefix="repoos-graphs-"))
    lines = [
        "| graph | algorithm | peer | conversion | median s | spread | peak MB | vs NetworkX time | vs NetworkX memory | answer |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    findings = []
    for label in args.graphs.split(","):
        path = workdir / f"{label.replace(' ', '_')}.pickle"
        G = make_graph(GRAPHS[label])
        path.write_bytes(pickle.dumps(G))
        print(f"{label}: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges", flush=True)
        for algorithm in ALGORITHMS:
            reference, base = None, None
            for peer in PEERS:
                if not _implemented(peer, algorithm):
                    continue
                for conversion in ("included",) if peer == "networkx" else ("included", "excluded"):
                    answer = workdir / f"{label}-{algorithm}-{peer}-{conversion}.npy".replace(" ", "_")
                    spec = {"graph": str(path), "peer": peer, "algorithm": algorithm, "conversion": conversion}
                    result = measure({**spec, "measure": "time", "repeats": args.repeats, "answer": str(answer)})
                    result.update(measure({**spec, "measure": "memory"}))
                    if "error" in result:
                        row = f"| {label} | {algorithm} | {peer} | {conversion} | failed: {result['error'][:80]} | | | | | |"
                        lines.append(row)
                        print(row, flush=True)
                        continue
                    median, spread = _median_spread(result["times"])
                    got = np.load(answer)
                    if peer == "networkx":
                        reference, base = got, (median, result["peak_mb"])
                    agrees = reference is not None and _agrees(algorithm, got, reference)
                    time_ratio = f"{base[0] / median:.2f}x" if base else ""
                    memory_ratio = f"{result['peak_mb'] / base[1] * 100:.0f}%" if base and base[1] > 0 else ""
                    row = (
                        f"| {label} | {algorithm} | {peer} | {conversion} | {median:.4f} | ±{spread:.0f}% | "
                        f"{result['peak_mb']:.1f} | {time_ratio} | {memory_ratio} | {'equal' if agrees else 'DIFFERS'} |"
                    )
                    lines.append(row)
                    print(row, flush=True)
                    if peer == "repoos" and conversion == "excluded" and base:
                        findings.append((label, algorithm, base[0] / median, result["peak_mb"] / max(base[1], 1e-9)))
        if label == "1M edges":
            spmv = measure({"graph": str(path), "repeats": args.repeats}, role="spmv-child")
            if "error" not in spmv:
                scipy_median, scipy_spread = _median_spread(spmv["scipy.sparse"])
                ours_median, ours_spread = _median_spread(spmv["repoos"])
                lines += [
                    "",
                    f"spmv on the 1M-edge graph's adjacency ({os.cpu_count()} cores): scipy.sparse {scipy_median * 1000:.2f} ms "
                    f"±{scipy_spread:.0f}%, repoos {ours_median * 1000:.2f} ms ±{ours_spread:.0f}% "
                    f"({scipy_median / ours_median:.2f}x), outputs equal (rtol 1e-12).",
                ]
                print(lines[-1], flush=True)
    summary = "\n".join(
        f"- {label}, {algorithm}: {speed:.2f}x NetworkX's time, {memory * 100:.0f}% of its peak memory (conversion cached)."
        for label, algorithm, speed, memory in findings
    )
    print(summary)
    write_results("graphs.md", "Graph algorithms: the repoos NetworkX backend against NetworkX and its peers", lines, summary)


if __name__ == "__main__":
    main()
