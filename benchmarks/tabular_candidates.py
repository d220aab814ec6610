"""The fast path's candidate row builders, side by side on mysqlclient, for the seed's endpoint.

Once the ORM is gone, what is left is the driver's parse and the rows built from it. On one
mysqlclient session, for `get_revenue` at about 10,000 and 100,000 matching rows, each candidate
is checked equal (values and types) to the fast path, then timed alternately with the others:

- driver rows: mysqlclient's C parser with its own decoders, re-made as named tuples by `_make`
  (the fast path before it chose its decoders);
- Core rows: SQLAlchemy Core executing the endpoint's statement (`Row` objects);
- columnar: mysqlclient returning undecoded bytes, each column then decoded in one `map`
  (the shape of a columnar loader such as ConnectorX, in Python's own types);
- ours: `FastQuery`, C decoders and rows made from C (repoos_agent/tabular/fast_path.py).

Wall time and the process's CPU time (the client's share; the server's is not counted) are
medians over `--repeats` rounds after a warm-up.
Prints the table and writes it to benchmarks/results/tabular_candidates.md.
Run: `.venv/bin/python benchmarks/tabular_candidates.py [--repeats 9]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from report import write_results

ROWS = 210_000
MATCHING = (10_000, 100_000)
APP = "kernels/apps/revenue_app/main.py"
CANDIDATES = ("driver rows", "Core rows", "columnar", "ours")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()

    from repoos_agent.tabular.server import MariaDBServer

    with MariaDBServer() as server:
        os.environ["REVENUE_DB_URL"] = server.url("pymysql")
        run(server, args.repeats)


def run(server, repeats: int) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import sessionmaker

    from kernels.apps.revenue_app import database
    from kernels.apps.revenue_app.fill import fill

    with database.SessionLocal() as db:
        fill(db, ROWS, seed=1)
        query = "SELECT cancelled_revenue FROM revenue_details WHERE cancelled_revenue IS NOT NULL"
        cancelled = sorted(value for (value,) in db.execute(text(query)))
    engine = create_engine(server.url("mysqldb"))
    lines = [
        "| matching rows | " + " | ".join(f"{name}: wall / CPU" for name in CANDIDATES) + " | ours against driver rows (CPU) |",
        "|---:|" + "---:|" * (len(CANDIDATES) + 1),
    ]
    findings = []
    with sessionmaker(bind=engine)() as db:
        for count in MATCHING:
            values = {"min_cancelled": float(cancelled[-count - 1])}
            rows, figures = measure(db, values, repeats)
            cells = [f"{wall * 1e3:.1f} / {cpu * 1e3:.1f} ms" for wall, cpu in (figures[name] for name in CANDIDATES)]
            gain = figures["driver rows"][1] / figures["ours"][1]
            lines.append(f"| {rows} | " + " | ".join(cells) + f" | {gain:.2f}x |")
            print(lines[-1], flush=True)
            fastest = min(CANDIDATES, key=lambda name: figures[name][1])
            findings.append(f"- {rows} rows: least client CPU: {fastest}; ours takes {gain:.2f}x less than driver rows.")
    engine.dispose()
    summary = "\n".join(findings)
    print(summary)
    write_results("tabular_candidates.md", "The fast path's candidate row builders on mysqlclient (get_revenue)", lines, summary)


def measure(db, values: dict, repeats: int) -> tuple[int, dict[str, tuple[float, float]]]:
    """Each candidate's median wall and CPU seconds, after checking its rows equal to the fast path's."""
    from kernels.apps.revenue_app import main
    from repoos_agent.tabular.chain import read_chain
    from repoos_agent.tabular.compiled import build_statement
    from repoos_agent.tabular.fast_path import FastQuery
    from repoos_agent.tabular.verify import TabularContract, verify_endpoint

    contract = verify_endpoint(main.get_revenue, read_chain(APP, "get_revenue"), db, values)
    if not isinstance(contract, TabularContract):
        raise SystemExit(f"get_revenue: {contract.reason}")
    fast = FastQuery(contract.query)
    statement = build_statement(read_chain(APP, "get_revenue"), main.get_revenue, db)
    calls = {
        "driver rows": lambda: _driver_rows(db, fast, values),
        "Core rows": lambda: db.connection().execute(statement, values).all(),
        "columnar": lambda: _columnar(db, fast, values),
        "ours": lambda: fast(db, values),
    }
    expected = [(tuple(row), [type(value) for value in row]) for row in fast(db, values)]
    for name, call in calls.items():
        got = [(tuple(row), [type(value) for value in row]) for row in call()]
        if got != expected:
            raise SystemExit(f"candidate {name} differs from the fast path")
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    for _ in range(repeats + 1):
        for name, call in calls.items():
            wall, cpu = time.perf_counter(), time.process_time()
            call()
            samples[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    figures = {
        name: (statistics.median(w for w, _ in timed[1:]), statistics.median(c for _, c in timed[1:]))
        for name, timed in samples.items()
    }
    return len(expected), figures


def _cursor_rows(db, fast, values: dict, decoders: dict | None) -> tuple:
    connection = db.connection().connection.dbapi_connection
    saved = connection.converter
    if decoders is not None:
        connection.converter = decoders
    cursor = connection.cursor()
    try:
        cursor.execute(fast.query.sql, fast.query.bound(values))
        return cursor.fetchall()
    finally:
        cursor.close()
        connection.converter = saved


def _driver_rows(db, fast, values: dict) -> list:
    return list(map(fast.row._make, _cursor_rows(db, fast, values, None)))


def _columnar(db, fast, values: dict) -> list:
    """Undecoded bytes for dates and decimals, then one decode per column; text and integers stay decoded in C."""
    from datetime import date

    from MySQLdb.constants import FIELD_TYPE

    connection = db.connection().connection.dbapi_connection
    undecoded = {**connection.converter, FIELD_TYPE.DATE: None, FIELD_TYPE.NEWDECIMAL: None}
    rows = _cursor_rows(db, fast, values, undecoded)
    columns = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in fast.query.keys]
    for position, key in enumerate(fast.query.keys):
        if key == "booked_on":
            columns[position] = list(map(date.fromisoformat, map(bytes.decode, columns[position])))
        elif key in ("revenue", "cancelled_revenue"):
            columns[position] = [None if value is None else Decimal(value.decode()) for value in columns[position]]
    return list(map(fast.row._make, zip(*columns, strict=True)))


if __name__ == "__main__":
    main()
