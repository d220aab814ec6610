"""The tabular track through MCP: the SDK's client over stdio, `optimize_endpoint` against the session's real MariaDB.

One server process serves the module, started with the database only in `REPOOS_DB_URL`
(and, for the failures, a wrong password and a port nobody listens on in two more
variables), so every test also shows that the server kept serving after the ones before
it. Every tool result and error, and the server's stderr, is checked for the password.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path

import pytest

from repoos_agent.mcp.fsm_tools import INSTRUCTIONS as FSM_INSTRUCTIONS
from repoos_agent.mcp.server import INSTRUCTIONS
from repoos_agent.mcp.tabular_tools import INSTRUCTIONS as TABULAR_INSTRUCTIONS
from repoos_agent.store import SQLiteStore, TabularKernel
from tests.conftest import ROOT
from tests.mcp_client import Connection, connect

pytestmark = pytest.mark.anyio

APP = "kernels/apps/revenue_app/main.py"
REFUSED = "def endpoint(db):\n    return db.query(M).filter(M.x > 1).first()\n"
EDITABLE = """from kernels.apps.revenue_app.models import RevenueDetails


def cancelled(db, least: float = 20):
    return db.query(RevenueDetails).filter(RevenueDetails.cancelled_revenue {} least).all()
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tabular-graph") / "graph.sqlite"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second root holding an endpoint the tabular track refuses."""
    directory = tmp_path_factory.mktemp("endpoints")
    (directory / "refused.py").write_text(REFUSED)
    return directory


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-log") / "stderr.txt"


@pytest.fixture(scope="module")
async def mcp(app, server, graph, outside, server_log) -> Connection:
    environment = {name: value for name, value in os.environ.items() if name != "REVENUE_DB_URL"}
    environment |= {
        "REPOOS_DB_URL": server.url(),
        "REPOOS_WRONG_DB_URL": server.url().replace(server.password, "not-the-password"),
        "REPOOS_DOWN_DB_URL": server.url().replace(f":{server.port}/", f":{_closed_port()}/"),
        "REPOOS_GRAPH": str(graph),
    }
    command = [sys.executable, "-m", "repoos_agent", "mcp", "--root", "kernels/apps", "--root", str(outside)]
    with server_log.open("w") as errlog:
        async with connect(command, env=environment, errlog=errlog) as connection:
            yield connection
    assert connection.transport_faults == []


async def _call(mcp: Connection, server, arguments: dict, **options: object):
    """`optimize_endpoint`, its result (content and structured output) checked for the password."""
    result = await mcp.call("optimize_endpoint", arguments, **options)
    shown = json.dumps([block.model_dump() for block in result.content]) + json.dumps(result.structured_content)
    assert server.password not in shown and "not-the-password" not in shown
    return result


async def test_the_tool_publishes_its_fields_and_its_report(mcp: Connection):
    tools = {tool.name: tool for tool in (await mcp.session.list_tools()).tools}
    tool = tools["optimize_endpoint"]
    fields = tool.input_schema["properties"]
    assert set(fields) == {"target", "database_env", "args", "store"} and tool.input_schema["required"] == ["target"]
    assert fields["database_env"]["default"] == "REPOOS_DB_URL" and fields["store"]["default"] is True
    reported = {"sql", "parameters", "rows_compared", "orm_ms", "fast_ms", "speedup", "database", "stored"}
    assert reported <= set(tool.output_schema["properties"])


async def test_the_endpoint_is_verified_raced_and_stored(mcp: Connection, app, server, graph):
    main, database = app
    progress: list[tuple[float, float | None, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    target = f"{APP}:get_revenue"
    result = await _call(mcp, server, {"target": target, "args": ["min_cancelled=30"]}, progress_callback=record)
    assert not result.is_error, result.content
    report = result.structured_content
    with database.SessionLocal() as db:
        expected = len(main.get_revenue(db, min_cancelled=30))
    assert report["target"] == target and report["function"] == f"{ROOT / APP}:get_revenue"
    assert report["rows_compared"] == expected > 0
    assert "%(min_cancelled)s" in report["sql"] and report["parameters"] == ["min_cancelled"]
    assert report["orm_ms"] > 0 and report["fast_ms"] > 0
    assert report["speedup"] == pytest.approx(report["orm_ms"] / report["fast_ms"], rel=1e-6)
    assert report["database"].startswith("mysql+pymysql://app:***@127.0.0.1:")
    assert report["stored"] is True and report["store_warning"] == ""
    assert [(value, total) for value, total, _ in progress] == [(0, 1), (1, 1)]
    assert f"verified {expected} rows" in progress[-1][2]

    store = SQLiteStore(graph)
    (stored,) = store.all(TabularKernel)
    store.close()
    assert stored.key == report["function"] and stored.sql == report["sql"] and stored.rows_compared == expected
    assert server.password not in repr(stored)
    listed = json.loads((await mcp.session.read_resource("repoos://tabular/contracts")).contents[0].text)
    assert [(c["key"], c["sql"], c["speedup"]) for c in listed] == [(stored.key, stored.sql, stored.speedup)]


@pytest.mark.parametrize(
    ("endpoint", "name", "value"),
    [("get_revenue", "min_cancelled", "1 OR 1=1"), ("revenue_by_region", "region", "north' OR '1'='1")],
)
async def test_a_hostile_value_is_bound_and_the_result_sound(mcp: Connection, app, server, endpoint, name, value):
    main, database = app
    arguments = {"target": f"{APP}:{endpoint}", "args": [f"{name}={value}"], "store": False}
    result = await _call(mcp, server, arguments)
    assert not result.is_error, result.content
    report = result.structured_content
    with database.SessionLocal() as db:
        expected = len(getattr(main, endpoint)(db, **{name: value}))  # what the endpoint itself returns for that text
        assert db.query(main.models.Region).count() == 6
    assert report["sql"].count(f"%({name})s") == 1 and value not in report["sql"] and "'" not in report["sql"]
    assert report["rows_compared"] == expected and report["stored"] is False


async def test_mistakes_are_tool_errors_naming_the_field(mcp: Connection, server, outside):
    cases = [
        ({"target": "gemm"}, "target: `gemm`: give the endpoint as path/to/app.py:function"),
        ({"target": f"{APP}:no_such"}, f"target: {APP}: no top-level function named `no_such`"),
        ({"target": "kernels/apps/no_such.py:endpoint"}, "target: kernels/apps/no_such.py: "),
        ({"target": "tests/conftest.py:app"}, "target: `tests/conftest.py` is outside the directories this server may read"),
        ({"target": f"{outside}/refused.py:endpoint"}, "the query must end in `.all()`"),
        (
            {"target": f"{APP}:get_revenue", "database_env": "REPOOS_MISSING_DB_URL"},
            "database_env: REPOOS_MISSING_DB_URL is not set",
        ),
        ({"target": f"{APP}:get_revenue", "database_env": "OPENAI_API_KEY"}, "database_env: `OPENAI_API_KEY` is not a variable"),
        ({"target": f"{APP}:get_revenue", "database_env": server.url()}, "database_env: give the name of an environment variable"),
        ({"target": f"{APP}:get_revenue", "database_env": "REPOOS_WRONG_DB_URL"}, "database_env: REPOOS_WRONG_DB_URL: "),
        ({"target": f"{APP}:get_revenue", "database_env": "REPOOS_DOWN_DB_URL"}, "database_env: REPOOS_DOWN_DB_URL: "),
        ({"target": f"{APP}:get_revenue", "args": ["nope=1"]}, "args: nope: `get_revenue` takes min_cancelled"),
        ({"target": f"{APP}:get_revenue", "args": ["nope"]}, "`args` entry `nope`: expected NAME=VALUE"),
    ]
    for arguments, fragment in cases:
        result = await _call(mcp, server, arguments)
        text = result.content[0].text
        assert result.is_error and fragment in text, (arguments, text)
        assert "Traceback" not in text
    refused = (await _call(mcp, server, {"target": f"{outside}/refused.py:endpoint"})).content[0].text
    assert re.search(r"target: .*refused\.py:2:\d+: ", refused)
    wrong = (await _call(mcp, server, {"target": f"{APP}:get_revenue", "database_env": "REPOOS_WRONG_DB_URL"})).content[0].text
    assert "Access denied" in wrong and "***" in wrong


async def test_an_edited_endpoint_is_verified_as_edited(mcp: Connection, app, server, outside):
    main, database = app
    editable = outside / "editable.py"
    counts = []
    for comparison in (">", "<"):
        editable.write_text(EDITABLE.format(comparison))
        result = await _call(mcp, server, {"target": f"{editable}:cancelled", "store": False})
        assert not result.is_error, result.content
        counts.append(result.structured_content["rows_compared"])
    with database.SessionLocal() as db:
        lines, cancelled = db.query(main.models.RevenueDetails), main.models.RevenueDetails.cancelled_revenue
        assert counts == [lines.filter(cancelled > 20).count(), lines.filter(cancelled < 20).count()]


async def test_ingest_shows_the_query_and_the_instructions_name_the_tool(mcp: Connection):
    result = await mcp.call("ingest", {"path": APP})
    functions = {f["name"]: f for f in result.structured_content["functions"]}
    revenue = functions["get_revenue"]
    assert revenue["track"] == "tabular" and revenue["target"] == f"{APP}:get_revenue"
    assert revenue["reason"] == "an ORM query on `db`: query(...) .filter() .all(); values from min_cancelled"
    assert (
        "optimize_endpoint" in mcp.instructions
        and mcp.instructions == f"{INSTRUCTIONS}\n{TABULAR_INSTRUCTIONS}\n{FSM_INSTRUCTIONS}"
    )


async def test_the_password_never_reaches_the_server_log(mcp: Connection, server, server_log):
    await mcp.session.list_tools()  # the calls before this one have finished writing
    log = server_log.read_text()
    assert server.password not in log and "not-the-password" not in log


def _closed_port() -> int:
    """A port nothing listens on: bound once to find it free, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
