"""`repoos run` and `repoos bench` on ORM endpoints, against a real MariaDB: the served JSON, the A/B table, the errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from repoos_agent.store import Batch, SQLiteStore, TabularKernel

ROOT = Path(__file__).resolve().parent.parent
APP = "kernels/apps/revenue_app/main.py"
TARGET = "kernels.apps.revenue_app.main.get_revenue"
REPOOS = [sys.executable, "-m", "repoos_agent"]


def _repoos(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI from the checkout's root, as a user runs it (REVENUE_DB_URL, set by the `app` fixture, inherited)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([*REPOOS, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def graph(app, server, tmp_path_factory) -> Path:
    """A graph store holding the TabularKernel `repoos optimize --db` verified for `get_revenue`."""
    path = tmp_path_factory.mktemp("tabular-runtime") / "graph.sqlite"
    done = _repoos("optimize", f"{APP}:get_revenue", "--db", server.url(), "--graph", str(path))
    assert done.returncode == 0, done.stderr
    return path


def _record(graph: Path) -> TabularKernel:
    store = SQLiteStore(graph)
    try:
        (record,) = store.all(TabularKernel)
    finally:
        store.close()
    return record


def _store_with(record: TabularKernel, path: Path) -> Path:
    store = SQLiteStore(path)
    try:
        store.write(Batch((record,), ()))
    finally:
        store.close()
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(graph: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [*REPOOS, "run", "--graph", str(graph), "kernels/apps/revenue_app/serve.py", "--port", str(port)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {process.communicate()[1]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the server did not listen within 30 s")


def test_repoos_run_serves_the_app_on_its_fast_path(app, server, graph):
    """The JSON is the un-swapped app's, the database received the fast path's SQL (never the ORM's labelled
    SELECT), and stderr names the swap and no fallback."""
    from fastapi.testclient import TestClient

    main, _ = app
    params = {"min_cancelled": 45}
    expected = TestClient(main.app).get("/revenue", params=params).json()
    port = _free_port()
    process = _serve(graph, port)
    try:
        _wait_for(port, process)
        server.sql("TRUNCATE mysql.general_log; SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 'ON'")
        try:
            served = httpx.get(f"http://127.0.0.1:{port}/revenue", params=params, timeout=30)
        finally:
            server.sql("SET GLOBAL general_log = 'OFF'")
        received = server.sql("SELECT argument FROM mysql.general_log WHERE command_type = 'Query'").replace(
            "\\n", "\n"
        )  # the client escapes newlines
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert served.status_code == 200 and served.json() == expected and len(expected) > 0
    assert " ".join(_record(graph).sql.split("%(")[0].split()) in " ".join(received.split())
    assert "AS revenue_details_id" not in received  # what the ORM's own query would have sent
    assert f"repoos: swapped {ROOT / APP}:get_revenue: its verified fast path, guarded (TabularKernel)" in err
    assert "runs its ORM query" not in err
    assert server.password not in out + err


def test_repoos_bench_prints_the_ab_table_with_success(app, server, graph):
    done = _repoos("bench", APP, TARGET, "5", "--graph", str(graph), "--arg", "min_cancelled=30")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"{APP}:get_revenue, 5 calls per leg"
    assert lines[1].split() == ["time/call", "(ms)", "peak", "mem", "(MB)", "avg", "CPU", "(%)", "runs", "on"]
    assert lines[2].split()[0] == "python" and lines[2].endswith("ORM (the endpoint as written)")
    assert lines[3].split()[0] == "swapped" and "TabularKernel fast path (verified on" in lines[3]
    assert lines[-2:] == ["  outputs (response) match exactly, in order", "STATUS: SUCCESS"]
    assert server.password not in done.stdout + done.stderr


@pytest.mark.slow  # end to end: the slow set runs it
def test_repoos_bench_json_names_both_routes(app, graph):
    done = _repoos("bench", APP, TARGET, "2", "--graph", str(graph), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "SUCCESS" and report["outputs"] == ["response"] and report["max_rel_error"] is None
    assert report["swapped"]["route"].startswith("TabularKernel fast path") and report["python"]["calls"] == 2


@pytest.mark.slow  # end to end: the slow set runs it
def test_repoos_bench_catches_a_contract_that_returns_other_rows(app, graph, tmp_path):
    """A stored SQL that is not the verified one (here: cut to three rows) serves a different response: MISMATCH."""
    record = _record(graph)
    wrong = _store_with(replace(record, sql=record.sql + " LIMIT 3"), tmp_path / "wrong.sqlite")
    done = _repoos("bench", APP, TARGET, "2", "--graph", str(wrong))
    assert done.returncode == 1, done.stderr
    assert "  outputs differ: response" in done.stdout and done.stdout.strip().endswith("STATUS: MISMATCH")


def test_repoos_bench_without_a_contract_says_so_and_runs_the_orm(app, server, tmp_path):
    """A plain function (no FastAPI route, no dependency): its session from --db, its rows compared by key."""
    endpoint = tmp_path / "plain.py"
    endpoint.write_text(
        "from kernels.apps.revenue_app import models\n\n\n"
        "def lines_of(db, region='south'):\n"
        "    return db.query(models.RevenueDetails.id, models.RevenueDetails.revenue).join(models.Region)"
        ".filter(models.Region.name == region).order_by(models.RevenueDetails.id).all()\n"
    )
    empty = tmp_path / "empty.sqlite"
    SQLiteStore(empty).close()
    done = _repoos("bench", str(endpoint), "lines_of", "2", "--db", server.url(), "--graph", str(empty))
    assert done.returncode == 0, done.stderr
    assert f"ORM — not swapped: the graph store {empty} has no TabularKernel for it" in done.stdout
    assert done.stdout.strip().endswith("STATUS: SUCCESS") and server.password not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("wrong password", "(1045, \"Access denied for user 'app'"),
        ("unreachable", "(2003, \"Can't connect to MySQL server"),
    ],
)
def test_a_database_that_refuses_is_one_line_without_the_password(app, server, case, message):
    url = server.url().replace(server.password, "not-the-password")
    if case == "unreachable":
        url = url.replace(f":{server.port}/", f":{_free_port()}/")
    done = _repoos("bench", APP, TARGET, "2", "--db", url)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("repoos: error: the python leg failed: --db mysql+pymysql://app:***@127.0.0.1:")
    assert message in done.stderr
    assert "not-the-password" not in done.stdout + done.stderr and server.password not in done.stdout + done.stderr


def test_repoos_bench_of_no_such_function_is_one_line(app):
    done = _repoos("bench", APP, "kernels.apps.revenue_app.main.nope", "2")
    assert done.returncode == 2 and done.stderr == f"repoos: error: {APP}: no top-level function named `nope`\n"


def test_an_endpoint_edited_since_it_was_verified_runs_its_orm_query(app, graph, tmp_path):
    """The stored digest is the verified source's: a function that no longer reads that way falls back."""
    from repoos_agent.tabular.swap import swap_endpoint
    from repoos_agent.tabular.verify import TabularFallbackWarning

    main, database = app
    stale = _store_with(replace(_record(graph), source_digest="0" * 16), tmp_path / "stale.sqlite")
    guarded = swap_endpoint(main.get_revenue, str(stale))
    with database.SessionLocal() as db, pytest.warns(TabularFallbackWarning, match="the function changed since it was verified"):
        rows = guarded(db, min_cancelled=45)
    assert guarded.fast_calls == 0 and len(rows) > 0
    with database.SessionLocal() as db, warnings.catch_warnings():
        warnings.simplefilter("error", TabularFallbackWarning)
        swap_endpoint(main.get_revenue, str(graph))(db, min_cancelled=45)
