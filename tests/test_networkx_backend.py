"""The `repoos` NetworkX backend: NetworkX's own tests through it, and its answers equal NetworkX's on random graphs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

nx = pytest.importorskip("networkx")

from repoos_agent.graphs.backend import IMPLEMENTED  # noqa: E402

NETWORKX_TESTS = [
    "algorithms/link_analysis/tests/test_pagerank.py",
    "algorithms/centrality/tests/test_degree_centrality.py",
    "algorithms/components/tests/test_connected.py",
    "algorithms/tests/test_cluster.py",
    "algorithms/shortest_paths/tests/test_unweighted.py",
]
"""The test modules of the installed NetworkX that exercise the implemented algorithms."""


@pytest.fixture(autouse=True)
def _quiet_cache_notes():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Note: conversions to backend graphs are saved to cache")
        yield


def test_networkx_own_tests_pass_through_the_backend(tmp_path):
    root = Path(nx.__file__).parent
    env = {**os.environ, "NETWORKX_TEST_BACKEND": "repoos", "NETWORKX_FALLBACK_TO_NX": "True"}
    # NetworkX's tests live under .venv, inside this project: without an ini of their own, pytest would read ours
    # (its workers per core would swallow the log lines this test counts).
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-q", "-c", str(tmp_path / "pytest.ini"), "-p", "no:cacheprovider", "-W", "ignore"]
    command += ["-o", "log_cli=true", "--log-cli-level=DEBUG", *(str(root / test) for test in NETWORKX_TESTS)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout[-3000:]
    assert "failed" not in summary and "error" not in summary, summary
    used = Counter(re.findall(r"Using backend 'repoos' for call to '(\w+)'", result.stdout))
    assert set(used) == set(IMPLEMENTED), used  # every implemented algorithm ran in our kernels, not a fallback


def _random_graphs():
    """Directed and undirected, with self-loops, isolated nodes, dangling nodes and parallel edges."""
    graphs = []
    for seed in range(4):
        digraph = nx.gnp_random_graph(120, 0.04, seed=seed, directed=True)
        digraph.add_edges_from([(5, 5), (7, 7)])
        digraph.add_nodes_from(["isolated", ("tuple", 1)])
        digraph.remove_edges_from(list(digraph.out_edges(3)))  # dangling
        for u, v in list(digraph.edges)[::3]:
            digraph[u][v]["weight"] = 0.5 + (hash((u, v, seed)) % 7)
        graphs.append(digraph)
        graphs.append(digraph.to_undirected())
        multi = nx.MultiDiGraph(digraph)
        multi.add_edges_from([(0, 1), (0, 1), (2, 2)])
        graphs.append(multi)
        graphs.append(nx.MultiGraph(multi))
    graphs.append(nx.barabasi_albert_graph(300, 3, seed=1))
    graphs.append(nx.relabel_nodes(nx.path_graph(50), {i: 49 - i for i in range(50)}))  # distances against node order
    return graphs


GRAPHS = _random_graphs()


def within_networkx_tolerance(ours: dict, theirs: dict, tol: float = 1.0e-6) -> bool:
    """NetworkX's own stopping rule for PageRank: an L1 distance below `N * tol`. Both answers are that close
    to the fixed point (ours closer: it tests the rule every few iterations, so it may run a few more)."""
    return sum(abs(ours[n] - theirs[n]) for n in theirs) < len(theirs) * tol


@pytest.mark.parametrize("G", GRAPHS, ids=[f"{type(g).__name__}-{i}" for i, g in enumerate(GRAPHS)])
def test_answers_equal_networkx_on_random_graphs(G):
    ours, theirs = nx.pagerank(G, backend="repoos"), nx.pagerank(G, backend="networkx")
    assert ours.keys() == theirs.keys()
    assert within_networkx_tolerance(ours, theirs)
    assert nx.degree_centrality(G, backend="repoos") == pytest.approx(nx.degree_centrality(G, backend="networkx"), abs=1e-12)
    source = next(iter(G))
    for cutoff in (None, 2):
        expected = nx.single_source_shortest_path_length(G, source, cutoff, backend="networkx")
        assert nx.single_source_shortest_path_length(G, source, cutoff, backend="repoos") == expected
    if not G.is_directed():
        assert sorted(map(sorted, map(list, nx.connected_components(G, backend="repoos"))), key=str) == sorted(
            map(sorted, map(list, nx.connected_components(G, backend="networkx"))), key=str
        )
        assert nx.triangles(G, backend="repoos") == nx.triangles(G, backend="networkx")


def test_pagerank_options_match_networkx():
    G = GRAPHS[0]
    nodes = list(G)
    personalization = {node: (i % 5) + 1 for i, node in enumerate(nodes[:40])}
    dangling = {nodes[1]: 1, nodes[2]: 3}
    nstart = dict.fromkeys(nodes, 2.0)
    for kwargs in (
        {"personalization": personalization},
        {"dangling": dangling},
        {"nstart": nstart, "alpha": 0.6},
        {"weight": None},
    ):
        ours, theirs = nx.pagerank(G, backend="repoos", **kwargs), nx.pagerank(G, backend="networkx", **kwargs)
        assert within_networkx_tolerance(ours, theirs), kwargs
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=2, tol=1e-12, backend="repoos")


def test_the_cached_conversion_follows_changes_to_the_graph():
    G = nx.path_graph(6)
    assert nx.triangles(G, 0, backend="repoos") == 0
    G.add_edge(0, 2)
    assert nx.triangles(G, 0, backend="repoos") == 1
    assert nx.degree_centrality(G, backend="repoos")[0] == pytest.approx(2 / 5)


def test_an_unsupported_weight_falls_back_to_networkx_under_automatic_dispatch(monkeypatch):
    G = nx.DiGraph([(1, 2, {"weight": "heavy"})])
    monkeypatch.setattr(nx.config.backend_priority, "algos", ["repoos"])
    with pytest.raises(ValueError, match="could not convert string to float"):  # NetworkX's own error: it ran
        nx.pagerank(G)
    assert nx.pagerank(nx.cycle_graph(4)) == pytest.approx(dict.fromkeys(range(4), 0.25))


APP = """
import networkx as nx
G = nx.barabasi_albert_graph(2000, 4, seed=3)
print(round(sum(nx.pagerank(G).values()), 9), len(list(nx.connected_components(G))), sum(nx.triangles(G).values()) // 3)
"""


def test_an_app_runs_on_the_backend_with_automatic_dispatch(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    plain = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=300)
    env = {**os.environ, "NETWORKX_AUTOMATIC_BACKENDS": "repoos", "NETWORKX_WARNINGS_TO_IGNORE": "cache"}
    logged = f"import logging; logging.basicConfig(level=logging.DEBUG); exec(open({str(app)!r}).read())"
    routed = subprocess.run([sys.executable, "-c", logged], capture_output=True, text=True, env=env, timeout=300)
    assert routed.returncode == 0, routed.stderr[-2000:]
    assert routed.stdout == plain.stdout
    assert {"pagerank", "connected_components", "triangles"} <= set(
        re.findall(r"Using backend 'repoos' for call to '(\w+)'", routed.stderr)
    )
