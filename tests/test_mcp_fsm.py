"""The fsm track through MCP: the SDK's client over stdio, `optimize_branchy` racing a branchy function's variants and
`rewrite_menu` listing what applies to it.

One server process serves the module, with its graph store in `REPOOS_GRAPH`, so every test also shows that the
server kept serving after the ones (and the errors) before it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from repoos_agent.fsm.lower import lower_function
from repoos_agent.fsm.proposals import choices, menu_text
from repoos_agent.fsm.swap import function_node
from repoos_agent.fsm.track import assumed_types
from repoos_agent.mcp.fsm_tools import INSTRUCTIONS as FSM_INSTRUCTIONS
from repoos_agent.runtime.swap import swap
from repoos_agent.store import FsmKernel, SQLiteStore
from tests.conftest import ROOT
from tests.fixtures import fsm_functions
from tests.mcp_client import Connection, connect

pytestmark = pytest.mark.anyio

FIXTURE = "tests/fixtures/fsm_functions.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fsm-graph") / "graph.sqlite"


@pytest.fixture(scope="module")
async def mcp(graph) -> Connection:
    environment = dict(os.environ) | {"REPOOS_GRAPH": str(graph)}
    command = [sys.executable, "-m", "repoos_agent", "mcp", "--root", "tests/fixtures"]
    async with connect(command, env=environment) as connection:
        yield connection
    assert connection.transport_faults == []


async def test_the_server_lists_the_fsm_tools_and_says_when_to_call_them(mcp):
    names = [tool.name for tool in (await mcp.session.list_tools()).tools]
    assert {"optimize_branchy", "rewrite_menu"} <= set(names)
    assert FSM_INSTRUCTIONS in mcp.instructions


async def test_the_menu_is_the_engines_for_the_function_typed_as_ingest_types_it(mcp):
    result = await mcp.call("rewrite_menu", {"target": f"{FIXTURE}:count_tokens"})
    assert not result.is_error
    node = function_node(ROOT / FIXTURE, "count_tokens")
    function = lower_function(node, assumed_types(node))
    assert result.structured_content == {
        "target": f"{FIXTURE}:count_tokens",
        "menu": menu_text(function),
        "choices": choices(function),
    }
    assert result.structured_content["menu"].startswith("Rewrites of `count_tokens`: one variant a line")


async def test_a_race_returns_the_table_and_stores_the_winner_that_equals_the_original(mcp, graph):
    result = await mcp.call("optimize_branchy", {"target": f"{FIXTURE}:adler32", "args": ["data=bytes[3000]"]})
    assert not result.is_error, result.content[0].text
    race = result.structured_content
    baseline, *others = race["variants"]
    assert (baseline["variant"], baseline["verdict"]) == ("baseline", "baseline")
    assert baseline["median_ms"] > 0 and baseline["over_baseline"] == 1.0 and baseline["over_python"] > 0
    assert race["crowned"] in [variant["variant"] for variant in race["variants"]]
    assert race["python_ms"] > 0 and (race["stored"], race["store_warning"]) == (True, "")
    for variant in others:
        raced = variant["verdict"] == "qualified"
        assert (variant["median_ms"] is not None) == raced, variant
        assert variant["reason"]
    store = SQLiteStore(graph)
    [record] = store.all(FsmKernel)
    store.close()
    assert record.function == f"{ROOT / FIXTURE}:adler32"
    swapped = swap(fsm_functions.adler32, graph=str(graph))
    for data in (b"", b"\xff" * 5000, bytes(range(256)) * 3):
        assert swapped(data) == fsm_functions.adler32(data)


@pytest.mark.slow  # every heuristic variant of crc32 qualified: the slow set runs it
async def test_a_bundled_kernel_races_at_its_size_without_being_stored(mcp):
    result = await mcp.call("optimize_branchy", {"target": "fsm:crc32", "size": "MINI", "store": False})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["variants"][0]["verdict"] == "baseline"
    assert result.structured_content["stored"] is False


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "optimize_branchy",
            {"target": "/etc/passwd.py:f"},
            "`/etc/passwd.py` is outside the directories this server may read",
        ),
        ("optimize_branchy", {"target": f"{FIXTURE}:adler32"}, 'needs inputs for: data; add them to `args`: ["data=bytes[64]"]'),
        (
            "optimize_branchy",
            {"target": f"{FIXTURE}:adler32", "size": "SMALL"},
            "`size` applies to bundled kernels; give `tests/fixtures/fsm_functions.py:adler32` its inputs with `args`",
        ),
        ("rewrite_menu", {"target": f"{FIXTURE}:no_such_function"}, "no top-level function named `no_such_function`"),
        ("rewrite_menu", {"target": "fsm:no_such_kernel"}, "no_such_kernel"),
    ],
)
async def test_a_mistake_is_a_tool_error_naming_what_to_fix(mcp, tool, arguments, message):
    result = await mcp.call(tool, arguments)
    assert result.is_error
    assert message in result.content[0].text


async def test_a_refusal_names_the_callers_path_and_the_line(mcp):
    result = await mcp.call("rewrite_menu", {"target": f"{FIXTURE}:table_lookup", "args": ["data=bytes[8]"]})
    assert result.is_error
    line = fsm_functions.table_lookup.__code__.co_firstlineno + 1
    text = result.content[0].text
    assert f"{FIXTURE}:{line}: `table_lookup` is not modelled by the fsm track: a dict" in text
    assert str(ROOT) not in text
