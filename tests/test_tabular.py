"""The tabular track against a real MariaDB: fast paths equal to the ORM, bound values, guards that fall back."""

from __future__ import annotations

import warnings

import pytest

from repoos_agent.tabular.chain import TabularRefusal, chain_of, read_chain
from repoos_agent.tabular.fast_path import FastQuery
from repoos_agent.tabular.verify import GuardedEndpoint, Mismatch, TabularContract, TabularFallbackWarning, verify_endpoint

APP = "kernels/apps/revenue_app/main.py"
ENDPOINTS = {
    "get_revenue": [{"min_cancelled": 20}, {"min_cancelled": 0}, {"min_cancelled": 10**9}],  # the last is empty
    "top_revenue": [{"limit": 25, "since": "2020-01-01"}, {"limit": 0, "since": "2020-01-01"}],
    "revenue_by_region": [{"region": "north"}, {"region": "東京"}, {"region": "Zürich"}, {"region": "nowhere"}],
    "totals_by_region": [{}],
}
HOSTILE = ["north' OR '1'='1", "1 OR 1=1", 'x"; DROP TABLE regions; --', "\x00", "\\", "%s", "%(region)s"]


def _contract(app, name: str, values: dict) -> TabularContract:
    main, database = app
    with database.SessionLocal() as db:
        contract = verify_endpoint(getattr(main, name), read_chain(APP, name), db, values)
    assert isinstance(contract, TabularContract), contract
    return contract


@pytest.mark.parametrize("name", ENDPOINTS)
def test_every_endpoint_fast_path_equals_the_orm(app, name):
    main, database = app
    for values in ENDPOINTS[name]:
        contract = _contract(app, name, values)
        with database.SessionLocal() as db:
            expected = getattr(main, name)(db, **values)
            got = FastQuery(contract.query)(db, values)
        keys = contract.query.keys
        assert [tuple(getattr(r, k) for k in keys) for r in expected] == [tuple(r) for r in got] or not contract.query.ordered
        assert len(got) == len(expected)
    assert contract.query.sql.startswith("SELECT")


def test_the_data_has_nulls_decimals_dates_and_unicode(app):
    main, database = app
    with database.SessionLocal() as db:
        rows = FastQuery(_contract(app, "get_revenue", {"min_cancelled": -1}).query)(db, {"min_cancelled": -1})
        every = db.query(main.models.RevenueDetails).all()
    assert any(r.note is None for r in every) and any(r.cancelled_revenue is None for r in every)
    assert any("ü" in r.note for r in rows if r.note) and type(rows[0].revenue).__name__ == "Decimal"
    assert type(rows[0].booked_on).__name__ == "date"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_is_bound_not_spliced(app, value):
    main, database = app
    contract = _contract(app, "revenue_by_region", {"region": "north"})
    assert "'" not in contract.query.sql and contract.query.sql.count("%(region)s") == 1  # one placeholder, no literal
    with database.SessionLocal() as db:
        assert FastQuery(contract.query)(db, {"region": value}) == []
        assert main.revenue_by_region(db, region=value) == []
        assert db.query(main.models.Region).count() == 6  # nothing dropped


def test_pending_writes_run_the_orm_with_a_warning(app):
    main, database = app
    guarded = GuardedEndpoint(main.get_revenue, _contract(app, "get_revenue", {"min_cancelled": 20}))
    with database.SessionLocal() as db:
        fast = guarded(db, min_cancelled=20)
        assert guarded.fast_calls == 1
        line = db.get(main.models.RevenueDetails, 1)
        line.cancelled_revenue = 10**8  # pending: autoflush must send it before the query
        with pytest.warns(TabularFallbackWarning, match="pending writes"):
            slow = guarded(db, min_cancelled=10**7)
        assert [r.id for r in slow] == [1] and guarded.fast_calls == 1
        db.rollback()
    assert len(fast) > 0


def test_a_changed_schema_runs_the_orm_with_a_warning(app, server, monkeypatch):
    main, database = app
    monkeypatch.setattr("repoos_agent.tabular.verify.SCHEMA_RECHECK_S", 0.0)
    guarded = GuardedEndpoint(main.totals_by_region, _contract(app, "totals_by_region", {}))
    with database.SessionLocal() as db:
        guarded(db)
        assert guarded.fast_calls == 1
    server.sql("ALTER TABLE app.regions ADD COLUMN code VARCHAR(8) NULL")
    try:
        with database.SessionLocal() as db, pytest.warns(TabularFallbackWarning, match="schema changed"):
            guarded(db)
        assert guarded.fast_calls == 1
    finally:
        server.sql("ALTER TABLE app.regions DROP COLUMN code")


def test_an_edited_function_runs_the_orm_with_a_warning(app):
    main, _ = app
    contract = _contract(app, "get_revenue", {"min_cancelled": 20})
    from repoos_agent.ingest.parse import functions, parse_source

    edited_source = "def get_revenue(db, min_cancelled=20):\n    return db.query(models.RevenueDetails).all()\n"
    edited_chain = chain_of(functions(parse_source(edited_source, APP))[0], APP)
    stale = TabularContract(edited_chain, contract.query, contract.schema_digest, contract.rows_compared)
    guarded = GuardedEndpoint(main.get_revenue, stale)
    assert guarded.edited == "the function changed since it was verified"


def test_a_mismatch_is_reported_not_swapped(app):
    main, database = app
    models = main.models

    def get_revenue(db, min_cancelled=20):  # not what the verified source says: a different answer
        return db.query(models.RevenueDetails).filter(models.RevenueDetails.cancelled_revenue > min_cancelled).limit(3).all()

    get_revenue.__globals__["models"] = models
    with database.SessionLocal() as db:
        result = verify_endpoint(get_revenue, read_chain(APP, "get_revenue"), db, {"min_cancelled": 20})
    assert isinstance(result, Mismatch) and "rows against the endpoint's 3" in result.reason


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("    rows = db.query(M).all()\n    return rows\n", "must be one `return` of a query ending in `.all()`"),
        ("    return db.query(M).filter(M.x > 1).first()\n", "the query must end in `.all()`"),
        ("    return db.query(M).distinct().all()\n", "`.distinct` is not a query clause"),
        ("    return other.query(M).all()\n", "must be called on a parameter"),
    ],
)
def test_what_is_not_a_query_is_refused_at_its_line(tmp_path, body, fragment):
    path = tmp_path / "endpoint.py"
    path.write_text("def endpoint(db):\n" + body)
    with pytest.raises(TabularRefusal, match=r"endpoint.py:\d+:\d+: ") as error:
        read_chain(path, "endpoint")
    assert fragment in str(error.value)


def test_the_swapped_endpoint_serves_the_same_json_through_fastapi(app, server, monkeypatch):
    from fastapi.testclient import TestClient

    monkeypatch.setattr("repoos_agent.tabular.verify.SCHEMA_RECHECK_S", 0.0)

    main, _ = app
    client = TestClient(main.app)
    expected = client.get("/revenue/by-region", params={"region": "south"}).json()
    guarded = GuardedEndpoint(main.revenue_by_region, _contract(app, "revenue_by_region", {"region": "south"}))
    route = next(r for r in main.app.routes if getattr(r, "path", "") == "/revenue/by-region")
    original = route.dependant.call
    route.dependant.call = guarded
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TabularFallbackWarning)
            assert client.get("/revenue/by-region", params={"region": "south"}).json() == expected
    finally:
        route.dependant.call = original
    assert guarded.fast_calls == 1 and len(expected) > 0
    assert server.password not in repr(guarded.contract)


@pytest.mark.slow  # end to end: the slow set runs it
def test_optimize_stores_a_contract_the_app_then_serves(app, server, tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    from fastapi.testclient import TestClient

    from repoos_agent.store import SQLiteStore, TabularKernel
    from repoos_agent.tabular.swap import install

    main, _ = app
    graph = tmp_path / "graph.sqlite"
    command = [sys.executable, "-m", "repoos_agent", "optimize", f"{APP}:get_revenue", "--db", server.url(), "--graph", str(graph)]
    done = subprocess.run([*command, "--json", "--arg", "min_cancelled=30"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows_compared"] > 0 and report["speedup"] > 0 and "%(min_cancelled)s" in report["sql"]
    assert server.password not in done.stdout + done.stderr and "***" in report["database"]
    store = SQLiteStore(graph)
    (record,) = store.all(TabularKernel)
    store.close()
    assert server.password not in repr(record)

    monkeypatch.setattr("repoos_agent.tabular.verify.SCHEMA_RECHECK_S", 0.0)
    client = TestClient(main.app)
    expected = client.get("/revenue", params={"min_cancelled": 45}).json()
    route = next(r for r in main.app.routes if getattr(r, "path", "") == "/revenue")
    original = route.dependant.call
    try:
        assert install(main.app, str(graph)) == ["/revenue"]
        assert client.get("/revenue", params={"min_cancelled": 45}).json() == expected
        assert route.dependant.call.fast_calls == 1
    finally:
        route.dependant.call = original

    wrong = [*command[:-2], "--db", server.url().replace(server.password, "not-it")]
    refused = subprocess.run(wrong, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and refused.stderr.startswith("repoos: error: --db ") and "Traceback" not in refused.stderr
    assert "not-it" not in refused.stderr


@pytest.fixture(scope="module")
def mysqlclient_sessions(server):
    """Sessions on mysqlclient, the C driver whose date decoders the fast path replaces by C callables."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    engine = create_engine(server.url("mysqldb"))
    yield sessionmaker(bind=engine)
    engine.dispose()


@pytest.mark.parametrize("name", ENDPOINTS)
def test_on_mysqlclient_every_fast_path_equals_the_orm_value_for_value(app, mysqlclient_sessions, name):
    main, _ = app
    for values in ENDPOINTS[name]:
        with mysqlclient_sessions() as db:
            contract = verify_endpoint(getattr(main, name), read_chain(APP, name), db, values)
            assert isinstance(contract, TabularContract), contract
            expected = getattr(main, name)(db, **values)
            got = FastQuery(contract.query)(db, values)
        rows = [tuple(getattr(r, k) for k in contract.query.keys) for r in expected] if contract.query.entity else expected
        assert [tuple(r) for r in rows] == [tuple(r) for r in got]
        assert [[type(v) for v in r] for r in rows] == [[type(v) for v in r] for r in got]


def test_a_zero_date_the_c_decoders_reject_reads_as_the_orm_reads_it(app, server, mysqlclient_sessions):
    main, _ = app
    columns = "id, region_id, customer, booked_on, revenue"
    server.sql(f"INSERT INTO app.revenue_details ({columns}) VALUES (999999, 1, 'z', '0000-00-00', 1e9)")
    try:
        with mysqlclient_sessions() as db:
            contract = verify_endpoint(main.top_revenue, read_chain(APP, "top_revenue"), db, {"limit": 3, "since": "0000-00-00"})
            assert isinstance(contract, TabularContract), contract
            got = FastQuery(contract.query)(db, {"limit": 3, "since": "0000-00-00"})
            expected = main.top_revenue(db, limit=3, since="0000-00-00")
            assert got[0].id == 999999 and got[0].booked_on is None and expected[0].booked_on is None
            assert FastQuery(contract.query)(db, {"limit": 3, "since": "2020-01-01"})[0].id != 999999  # the connection still works
    finally:
        server.sql("DELETE FROM app.revenue_details WHERE id = 999999")


def test_a_contract_verified_on_one_driver_runs_the_orm_on_another(app, mysqlclient_sessions):
    main, _ = app
    contract = _contract(app, "get_revenue", {"min_cancelled": 20})  # verified through PyMySQL
    assert contract.query.dialect == "mysql+pymysql"
    guarded = GuardedEndpoint(main.get_revenue, contract)
    with mysqlclient_sessions() as db, pytest.warns(TabularFallbackWarning, match="runs on mysql[+]mysqldb"):
        rows = guarded(db, min_cancelled=20)
    assert guarded.fast_calls == 0 and len(rows) > 0
