"""The semantic graph: the same behaviour from the SQLite file and from a Neo4j-protocol server (FalkorDB)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.store import (
    Array,
    Batch,
    Dependence,
    Function,
    Loop,
    Measurement,
    Module,
    Schedule,
    SQLiteStore,
    Statement,
    VerifiedKernel,
    function_key,
)
from repoos_agent.store.recording import record_evaluation, record_ingest, record_winner, stored_schedule
from repoos_agent.target import resolve_target
from tests.conftest import ROOT
from tests.graph_servers import start_falkordb

GEMM = ROOT / "kernels" / "polybench" / "gemm.py"
ALL_KINDS = (Module, Function, Statement, Loop, Array, Dependence, Schedule, Measurement, VerifiedKernel)


@pytest.fixture(scope="session")
def bolt_driver(tmp_path_factory: pytest.TempPathFactory):
    """One FalkorDB server and one driver for the whole session (see tests/graph_servers.py)."""
    import neo4j

    try:
        server = start_falkordb(tmp_path_factory.mktemp("falkordb"))
    except (OSError, RuntimeError) as error:
        pytest.skip(f"NEO4J BACKEND NOT TESTED: FalkorDB's Bolt server could not start here: {error}")
    driver = neo4j.GraphDatabase.driver(server.url, auth=None)
    yield server.url, driver
    driver.close()
    server.stop()


@pytest.fixture(params=["sqlite", "neo4j"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        opened = SQLiteStore(tmp_path / ".repoos" / "graph.sqlite")
        yield opened
        opened.close()
        return
    from repoos_agent.store.neo4j import Neo4jStore

    url, driver = request.getfixturevalue("bolt_driver")
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
    yield Neo4jStore(url, driver=driver)


def _census(store) -> dict[str, int]:
    return {cls.KIND: store.count(cls) for cls in ALL_KINDS} | {"edges": store.edge_count()}


def test_ingest_writes_the_model_and_the_baseline_text(store):
    record_ingest(store, GEMM)
    gemm = store.get(Function, function_key(GEMM, "gemm"))
    assert gemm is not None and gemm.analyzable and gemm.name == "gemm"
    assert gemm.arguments == ("ni", "nj", "nk", "alpha", "beta", "C", "A", "B")
    assert "int repoos_kernel(" in gemm.baseline_c and "func.func @repoos_mlir_kernel" in gemm.baseline_mlir
    assert "C:float64" in gemm.baseline_signature
    statements = store.related(gemm, "HAS_STATEMENT", Statement)
    assert [(s.label, s.loops) for s in statements] == [("S0", ("i", "j")), ("S1", ("i", "k", "j"))]
    assert statements[1].reduction
    arrays = {a.name: a for a in store.related(gemm, "HAS_ARRAY", Array)}
    assert arrays["C"].written and not arrays["A"].written and arrays["B"].rank == 2
    dependences = store.related(gemm, "HAS_DEPENDENCE", Dependence)
    assert any(d.kind == "flow" and d.source == "S0" and d.sink == "S1" and d.array == "C" for d in dependences)
    loops = {loop.name: loop for loop in store.related(gemm, "HAS_LOOP", Loop)}
    assert loops["i"].parallelizable
    init = store.get(Function, function_key(GEMM, "init"))
    assert init is not None and not init.analyzable and init.baseline_c is None
    module = store.get(Module, str(GEMM.resolve()))
    assert [f.name for f in store.related(module, "DEFINES", Function)] == ["gemm", "init"]


def test_reingesting_is_idempotent(store):
    record_ingest(store, GEMM)
    first = _census(store)
    record_ingest(store, GEMM)
    assert _census(store) == first
    assert first["Statement"] == 2 and first["Function"] == 2 and first["edges"] > 10


def test_reingesting_a_changed_function_replaces_its_model(store, tmp_path: Path):
    path = tmp_path / "kernel.py"
    path.write_text(
        "def scale(n, a, b):\n    for i in range(n):\n        b[i] = 2.0 * a[i]\n    for i in range(n):\n        a[i] = b[i]\n"
    )
    record_ingest(store, path)
    before = store.get(Function, function_key(path, "scale"))
    path.write_text("def scale(n, a, b):\n    for i in range(n):\n        b[i] = 3.0 * a[i]\n")
    record_ingest(store, path)
    after = store.get(Function, function_key(path, "scale"))
    assert after.source_hash != before.source_hash
    assert [s.text for s in store.related(after, "HAS_STATEMENT", Statement)] == ["b[i] = 3.0 * a[i]"]
    assert store.count(Statement) == 1


def test_check_and_optimize_records_round_trip(store):
    target = resolve_target("gemm")
    evaluation = evaluate_schedule(target, "parallelize(i)", "MINI")
    record_evaluation(store, target, evaluation)
    record_evaluation(store, target, evaluate_schedule(target, "parallelize(k)", "MINI", measure=False))
    contract = record_winner(store, target, evaluation)
    gemm = store.get(Function, function_key(GEMM, "gemm"))
    tried = {s.text: s for s in store.related(gemm, "TRIED", Schedule)}
    assert tried["parallelize(i)"].verdict == "legal" and tried["parallelize(i)"].verified == "true"
    assert tried["parallelize(k)"].verdict == "illegal" and "dependence" in tried["parallelize(k)"].feedback
    measured = store.related(tried["parallelize(i)"], "MEASURED", Measurement)
    assert len(measured) == 1 and measured[0].correct and measured[0].speedup == evaluation.speedup
    assert measured[0].reference_seconds == evaluation.baseline_s  # exact, even where FalkorDB rounds float parameters
    assert store.get(VerifiedKernel, gemm.key) == contract
    assert store.all(VerifiedKernel) == [contract]
    assert [s.text for s in store.find(Schedule, "verdict", "illegal")] == ["parallelize(k)"]
    assert [k.key for k in store.related(gemm, "VERIFIED_AS", VerifiedKernel)] == [contract.key]
    assert contract.schedule == "parallelize(i)" and contract.z3_verdict == "true" and contract.isl_verdict == "legal"
    assert contract.source_hash == gemm.source_hash and contract.signature[-1] == "B:float64"
    assert Path(contract.library).exists() and "-O3" in contract.flags and contract.cpu


@pytest.mark.parametrize(
    "feedback",
    ["the candidate's samples fall in two groups", "a\\b and a\\'b", 'it\'s "quoted" at the end\\', "q''q", "\\n in C"],
)
def test_text_with_quotes_and_backslashes_round_trips(store, feedback):
    """Feedback says "the candidate's samples ..." when a race is unsettled; generated C holds backslashes."""
    schedule = Schedule(f"k|{feedback}", "k", feedback, "legal", "true", feedback)
    store.write(Batch((schedule,), ()))
    assert store.get(Schedule, schedule.key) == schedule
    assert [s.key for s in store.find(Schedule, "feedback", feedback)] == [schedule.key]


def test_the_stored_schedule_is_the_incumbent_only_for_the_same_source_and_backend(store, tmp_path: Path):
    # `repoos optimize` races the stored kernel's schedule in its finish; a kernel built from other
    # source, or by the other backend, is no incumbent.
    path = tmp_path / "kernel.py"
    path.write_text("def scale(n, a, b):\n    for i in range(n):\n        b[i] = 2.0 * a[i]\n")
    specs = [parse_arg_spec(text) for text in ("n=1000", "a=f64[n]", "b=f64[n]")]
    target = resolve_target(f"{path}:scale", specs)
    assert stored_schedule(store, target) is None
    record_winner(store, target, evaluate_schedule(target, "parallelize(i)", None))
    assert stored_schedule(store, target) == "parallelize(i)"
    assert stored_schedule(store, target, compiler="mlir") is None
    path.write_text("def scale(n, a, b):\n    for i in range(n):\n        b[i] = 3.0 * a[i]\n")
    assert stored_schedule(store, resolve_target(f"{path}:scale", specs)) is None


def test_sqlite_store_survives_reopening(tmp_path: Path):
    path = tmp_path / "graph.sqlite"
    first = SQLiteStore(path)
    record_ingest(first, GEMM)
    census = _census(first)
    first.close()
    second = SQLiteStore(path)
    assert _census(second) == census
    copy = tmp_path / "copy.sqlite"
    second.close()
    shutil.copy(path, copy)
    assert _census(SQLiteStore(copy)) == census
