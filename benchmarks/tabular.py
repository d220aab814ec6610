"""The tabular track against the ORM: the revenue app's endpoints on a real MariaDB, in process.

A throwaway MariaDB (`repoos_agent.tabular.server`) is filled with 210,000 seeded revenue lines
(`kernels/apps/revenue_app/fill.py`). `get_revenue` (the seed's endpoint) runs with thresholds
that match about 1,000, 10,000 and 100,000 rows, `top_revenue` with those limits, and the two
join endpoints once. For each, in the same run on the same data:

- the ORM through PyMySQL (the seed's baseline) and through mysqlclient (a C driver);
- SQLAlchemy Core executing the same statement;
- the raw drivers fetching the compiled SQL (PyMySQL, mysqlclient) and ConnectorX (Arrow);
- ours: the verified fast path on a PyMySQL session and on a mysqlclient session.

All of a case's contenders are warmed, then timed in turns (`report.timed_in_turns`: one run
of each per round, the order rotating), `--repeats` rounds or more for short calls (about a
second of samples, at most 41). A cell is the median and, after ±, half the middle half of the
runs (the interquartile range) in % of the median. Each contender's Python heap peak is taken
with tracemalloc over one more call (C drivers' own buffers are not counted). Every fast path's
rows are checked equal to the ORM's before timing.

Then through HTTP (benchmarks/tabular_http.py): the app under uvicorn as written, and with the
contracts `repoos optimize` stored installed, each request timed whole by an httpx client after
both servers' JSON is checked equal.

Prints the table and writes it to benchmarks/results/tabular.md (not with `--quick`: 3,000 rows
and 2 repeats, a smoke test of about a minute).
Run: `.venv/bin/python benchmarks/tabular.py [--repeats 7] [--quick]`, after
`.venv/bin/pip install -e '.[tabular-peers]'` (ConnectorX and PyArrow, about 350 MB installed).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import signal
import sys
import tempfile
import tracemalloc
from contextlib import ExitStack
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from report import timed_in_turns, write_results
from tabular_http import RevenueServer, measure_http, store_contracts

from repoos_agent.measure import Timing

ROWS = 210_000
QUICK_ROWS, QUICK_REPEATS = 3_000, 2
MATCHING = (1_000, 10_000, 100_000)
APP = "kernels/apps/revenue_app/main.py"


def _heap_peak_mb(call) -> float:
    """The Python heap's peak over one call, in MiB (tracemalloc; C drivers' own buffers are not counted)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=ROWS, help="revenue lines in the table (the sizes that fit run)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows, {QUICK_REPEATS} repeats, nothing written")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = QUICK_ROWS, QUICK_REPEATS
    if importlib.util.find_spec("connectorx") is None:
        raise SystemExit(
            "benchmarks/tabular.py: ConnectorX, the columnar reference every endpoint is measured against, is not "
            "installed; install it with `.venv/bin/pip install -e '.[tabular-peers]'`"
        )

    from repoos_agent.tabular.server import MariaDBServer

    # `kill` (SIGTERM) unwinds the `with` blocks as Ctrl-C does, so the MariaDB and uvicorn servers this run
    # started stop with it instead of running on in their own sessions.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    with MariaDBServer() as server:
        os.environ["REVENUE_DB_URL"] = server.url("pymysql")
        run(server, args.repeats, args.rows, write=not args.quick)


HEADER = (
    "| endpoint | rows | ORM PyMySQL (baseline) | ORM mysqlclient | Core | PyMySQL fetch | mysqlclient fetch | ConnectorX "
    "| ours, PyMySQL | ours, mysqlclient | ours / baseline: PyMySQL / mysqlclient | ours / fastest driver fetch "
    "| ours / ConnectorX | heap MB: ORM / ours | HTTP ORM PyMySQL | HTTP ours, PyMySQL | HTTP ours, mysqlclient "
    "| HTTP gain: PyMySQL / mysqlclient |"
)
DRIVERS = {"pymysql": "pymysql", "mysqlclient": "mysqldb"}
"""Our name for each driver, and its SQLAlchemy name."""


def run(server, repeats: int, total: int, write: bool) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from kernels.apps.revenue_app import database
    from kernels.apps.revenue_app.fill import fill

    with database.SessionLocal() as db:
        fill(db, total, seed=1)
    sessions = {"pymysql": database.SessionLocal, "mysqlclient": sessionmaker(bind=create_engine(server.url("mysqldb")))}
    with database.SessionLocal() as db:
        query = "SELECT cancelled_revenue FROM revenue_details WHERE cancelled_revenue IS NOT NULL"
        cancelled = sorted(value for (value,) in db.execute(_text(query)))
    cases = []
    for count in (count for count in MATCHING if count < len(cancelled)):
        cases.append(("get_revenue", {"min_cancelled": float(cancelled[-count - 1])}))
        cases.append(("top_revenue", {"limit": count, "since": datetime.date(2018, 1, 1)}))
    cases += [("revenue_by_region", {"region": "north"}), ("totals_by_region", {})]
    graphs = {driver: Path(tempfile.mkdtemp(prefix=f"repoos-bench-{driver}-")) / "graph.sqlite" for driver in DRIVERS}
    first_cases = dict(reversed(cases))  # each endpoint's contract verified at its first (smallest) case
    for driver, graph in graphs.items():
        store_contracts(server.url(DRIVERS[driver]), graph, first_cases)
    with (
        RevenueServer() as orm_server,
        RevenueServer(graphs["pymysql"]) as fast_pymysql,
        RevenueServer(graphs["mysqlclient"], server.url("mysqldb")) as fast_mysqlclient,
    ):
        for fast_server in (fast_pymysql, fast_mysqlclient):
            if len(fast_server.installed) != len(first_cases):
                raise SystemExit(f"the fast paths installed on {fast_server.installed} only")
        fast_servers = {"pymysql": fast_pymysql, "mysqlclient": fast_mysqlclient}
        lines, findings = _table(server, sessions, cases, repeats, orm_server, fast_servers)
    summary = "\n".join(
        f"- {name}, {rows} rows: ours {gains['pymysql']:.2f}x the ORM through PyMySQL on a PyMySQL session, "
        f"{gains['mysqlclient']:.2f}x on a mysqlclient session; {to_fetch:.2f}x the fastest driver fetch; "
        f"{memory * 100:.0f}% of the ORM's Python heap peak; through HTTP {http['pymysql']:.2f}x / {http['mysqlclient']:.2f}x, "
        f"of which FastAPI's validation and JSON encoding of the rows, the same on every path, take {encode * 1000:.1f} ms."
        for name, rows, gains, to_fetch, memory, http, encode in findings
    )
    print(summary)
    if write:
        write_results("tabular.md", "The tabular track: the revenue endpoints against the ORM on MariaDB", lines, summary)


def _table(server, sessions: dict, cases: list, repeats: int, orm_server, fast_servers: dict) -> tuple[list[str], list[tuple]]:
    """One table row per case, in process then through HTTP, and the figures the summary states."""
    from kernels.apps.revenue_app import main
    from repoos_agent.tabular.readers import serving_routes

    lines = [HEADER, "|---|---:|" + "---:|" * 12 + "---|" + "---:|" * 4]
    findings = []
    for name, values in cases:
        rows, timings, heap_mb = measure_case(server, sessions, name, values, repeats)
        (route,) = serving_routes(getattr(main, name))
        timings |= measure_http(orm_server, fast_servers, route.path, values, repeats)
        timings["encode"] = _encoding(sessions["mysqlclient"], route, name, values, repeats)
        figures = {key: timing.median_s for key, timing in timings.items()}
        base = figures["orm pymysql"]
        gains = {driver: base / figures[f"ours {driver}"] for driver in DRIVERS}
        ours = min(figures["ours pymysql"], figures["ours mysqlclient"])
        fastest_fetch = min(figures["fetch pymysql"], figures["fetch mysqlclient"])
        http = {driver: figures["http orm"] / figures[f"http ours {driver}"] for driver in DRIVERS}
        cell = {key: f"{t.median_s * 1000:.2f} ms ±{t.spread * 50:.0f}%" for key, t in timings.items()}
        heap = f"{heap_mb['orm pymysql']:.1f} / {heap_mb['ours pymysql']:.1f}"
        order = ["orm pymysql", "orm mysqlclient", "core", "fetch pymysql", "fetch mysqlclient", "connectorx"]
        order += ["ours pymysql", "ours mysqlclient"]
        row = f"| {name} | {rows} | " + " | ".join(cell[key] for key in order)
        row += f" | {gains['pymysql']:.2f}x / {gains['mysqlclient']:.2f}x | {ours / fastest_fetch:.2f}x "
        row += f"| {ours / figures['connectorx']:.2f}x | {heap} "
        row += f"| {cell['http orm']} | {cell['http ours pymysql']} | {cell['http ours mysqlclient']} "
        row += f"| {http['pymysql']:.2f}x / {http['mysqlclient']:.2f}x |"
        lines.append(row)
        print(row, flush=True)
        memory = heap_mb["ours pymysql"] / max(heap_mb["orm pymysql"], 1e-9)
        findings.append((name, rows, gains, ours / fastest_fetch, memory, http, figures["encode"]))
    return lines, findings


def measure_case(server, sessions: dict, name: str, values: dict, repeats: int) -> tuple[int, dict, dict]:
    """Every contender on one endpoint and one set of values, timed in turns; the fast paths are verified
    equal to the ORM first. Returns the rows, each contender's Timing and its heap peak in MiB."""
    import connectorx

    from kernels.apps.revenue_app import main
    from repoos_agent.tabular.chain import read_chain
    from repoos_agent.tabular.compiled import build_statement
    from repoos_agent.tabular.fast_path import FastQuery
    from repoos_agent.tabular.verify import TabularContract, verify_endpoint

    endpoint = getattr(main, name)
    chain = read_chain(APP, name)
    contracts = {}
    for driver, factory in sessions.items():
        with factory() as db:
            contract = verify_endpoint(endpoint, chain, db, values)
        if not isinstance(contract, TabularContract):
            raise SystemExit(f"{name} on {driver}: {contract.reason}")
        contracts[driver] = contract
    literal = _literal_sql(contracts["pymysql"].query, sessions["pymysql"], values)
    url = server.url("pymysql").replace("mysql+pymysql", "mysql").replace("?charset=utf8mb4", "")
    with ExitStack() as open_sessions:
        calls = {}
        for driver, factory in sessions.items():
            db = open_sessions.enter_context(factory())
            query = contracts[driver].query
            calls[f"orm {driver}"] = partial(_orm_call, endpoint, db, values)
            calls[f"ours {driver}"] = partial(FastQuery(query), db, values)
            calls[f"fetch {driver}"] = partial(_fetch, db, query, values)
            if driver == "pymysql":
                calls["core"] = partial(_core_call, db, build_statement(chain, endpoint, db), values)
        calls["connectorx"] = partial(connectorx.read_sql, url, literal, return_type="arrow")
        rows = len(calls["ours mysqlclient"]())
        timings = timed_in_turns(calls, repeats)
        heap_mb = {key: _heap_peak_mb(call) for key, call in calls.items()}
    return rows, timings, heap_mb


def _orm_call(endpoint, db, values: dict) -> None:
    """The endpoint as written; its objects leave the identity map, so every call builds them anew as a request would."""
    endpoint(db, **values)
    db.expunge_all()


def _core_call(db, statement, values: dict) -> list:
    return db.execute(statement, values).all()


def _encoding(factory, route, name: str, values: dict, repeats: int) -> Timing:
    """What FastAPI does with the rows any path returns: validate them into the response model, encode JSON."""
    from pydantic import TypeAdapter

    from kernels.apps.revenue_app import main

    adapter = TypeAdapter(route.response_model)
    with factory() as db:
        rows = getattr(main, name)(db, **values)
        encode = partial(_validated_json, adapter, rows)
        return timed_in_turns({"encode": encode}, repeats)["encode"]


def _validated_json(adapter, rows) -> bytes:
    return adapter.dump_json(adapter.validate_python(rows, from_attributes=True))


def _text(sql: str):
    from sqlalchemy import text

    return text(sql)


def _fetch(db, query, values) -> list:
    cursor = db.connection().connection.dbapi_connection.cursor()
    cursor.execute(query.sql, query.bound(values))
    rows = cursor.fetchall()
    cursor.close()
    return rows


def _literal_sql(query, factory, values) -> str:
    """The SQL exactly as PyMySQL would send it, values escaped in (ConnectorX takes no bound parameters): a reference only."""
    with factory() as db:
        cursor = db.connection().connection.dbapi_connection.cursor()
        try:
            return cursor.mogrify(query.sql, query.bound(values))
        finally:
            cursor.close()


if __name__ == "__main__":
    main()
