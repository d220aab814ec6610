"""The MCP server as a coding assistant meets it: the SDK's client over stdio against `python -m repoos_agent mcp`.

One server process serves the whole module (started with `--root kernels/examples`), so
every test also shows that the server kept serving after the ones before it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import anyio
import pytest

from repoos_agent.agent.search import SearchConfig, most_evaluations
from repoos_agent.agent.tools import agent_tools
from repoos_agent.catalog import SIZE_CLASSES
from repoos_agent.store import open_store
from repoos_agent.store.records import Batch, VerifiedKernel
from repoos_agent.target import resolve_target
from tests.mcp_client import Connection, connect

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server() -> Connection:
    async with connect([sys.executable, "-m", "repoos_agent", "mcp", "--root", "kernels/examples"]) as connection:
        yield connection
    assert connection.transport_faults == []  # nothing but protocol messages on the server's stdout


async def test_tools_publish_input_and_output_schemas(server: Connection):
    tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    served = {"list_kernels", "ingest", "analyze", "check_legality", "evaluate", "optimize", "show_code", "swap"}
    assert set(tools) == served | {"optimize_endpoint", "optimize_branchy", "rewrite_menu"}
    check = tools["check_legality"]
    assert check.input_schema["required"] == ["target", "schedule"]
    assert "interchange(j, k)" in check.input_schema["properties"]["schedule"]["description"]
    assert "Prove a schedule legal" in check.description
    assert {"verdict", "feedback", "violations", "parallel_loops"} <= set(check.output_schema["properties"])
    evaluate = tools["evaluate"]
    assert set(evaluate.input_schema["properties"]) == {"target", "schedule", "size", "compiler", "args"}
    assert {"speedup", "spread", "correct", "verified"} <= set(evaluate.output_schema["properties"])
    assert {"enum": list(SIZE_CLASSES), "type": "string"} in evaluate.input_schema["properties"]["size"]["anyOf"]
    optimize = tools["optimize"]
    expected = {"target", "backend", "model", "iters", "k", "candidates", "moa", "aggregator", "size", "args", "budget_s"}
    assert set(optimize.input_schema["properties"]) == expected
    assert optimize.input_schema["properties"]["iters"]["minimum"] == 1
    assert {"schedule", "speedup", "leaderboard", "cancelled"} <= set(optimize.output_schema["properties"])
    assert all(tool.output_schema for tool in tools.values())


async def test_kernel_sources_are_resources(server: Connection):
    uris = {str(resource.uri) for resource in (await server.session.list_resources()).resources}
    assert "repoos://kernels/gemm" in uris and "repoos://runs/last/leaderboard" in uris
    source = (await server.session.read_resource("repoos://kernels/gemm")).contents[0].text
    assert "def gemm(" in source


async def test_check_legality_on_gemm_legal_and_illegal(server: Connection):
    legal = await server.call("check_legality", {"target": "gemm", "schedule": "interchange(j, k)"})
    assert not legal.is_error
    assert legal.structured_content["verdict"] == "legal" and legal.structured_content["legal"] is True
    illegal = await server.call("check_legality", {"target": "gemm", "schedule": "parallelize(k)"})
    report = illegal.structured_content
    assert not illegal.is_error and report["verdict"] == "illegal"
    assert "loop `k` cannot run parallel" in report["feedback"]
    assert report["violations"][0]["array"] == "C"
    example = report["violations"][0]["example"]
    assert "must run after S1(i=" in example and example.endswith("in different iterations of parallel loop `k`")


async def test_evaluate_returns_a_measured_speedup(server: Connection):
    result = await server.call("evaluate", {"target": "gemm", "schedule": "interchange(j, k)", "size": "MINI"})
    report = result.structured_content
    assert not result.is_error
    assert report["verdict"] == "legal" and report["correct"] is True and report["verified"] == "true"
    assert report["speedup"] > 0 and report["candidate_ms"] > 0 and report["baseline_ms"] > 0
    assert report["speedup"] == pytest.approx(report["baseline_ms"] / report["candidate_ms"], rel=1e-6)


async def test_optimize_reports_progress_and_returns_the_best_schedule(server: Connection):
    progress: list[tuple[float, float | None, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    arguments = {"target": "gemm", "size": "MINI", "iters": 1, "candidates": 2}
    result = await server.call("optimize", arguments, progress_callback=record)
    report = result.structured_content
    assert not result.is_error and report["cancelled"] is False
    assert report["evaluations"] == len(report["leaderboard"]) >= 1
    raced = [message for _, _, message in progress if (message or "").startswith("race: ")]
    assert len(progress) == report["evaluations"] + len(raced) + 1  # each evaluation, each finalist, then the result
    assert [value for value, _, _ in progress] == list(range(1, len(progress) + 1))
    schedules = {row["schedule"] for row in report["leaderboard"]}
    assert all(any(schedule in (message or "") for schedule in schedules) for _, _, message in progress[:-1])
    assert report["schedule"] in {"", *(row["schedule"] for row in report["leaderboard"])}
    board = await server.leaderboard()
    assert board["status"] == "finished" and board["best_schedule"] == report["schedule"]
    assert board["rows"] == report["leaderboard"]  # the live resource ends ranked as the result is


async def test_optimize_progress_ends_at_its_total_though_the_search_made_fewer_evaluations(server: Connection):
    progress: list[tuple[float, float | None, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    arguments = {"target": "gemm", "size": "MINI", "iters": 1, "candidates": 2}
    result = await server.call("optimize", arguments, progress_callback=record)
    assert not result.is_error
    bound = most_evaluations(SearchConfig(iters=1, candidates=2)) + 1  # proposals, finalists in every round, the result
    *steps, (last, total, message) = progress
    assert {step_total for _, step_total, _ in steps} == {bound}
    assert last == total < bound  # two proposals make two finalists at most: the bar still ends full
    assert message.startswith("finished after ") and message.endswith(result.structured_content["finish"])


async def test_optimize_returns_the_racing_winner_first_on_its_leaderboard_with_the_speedup_it_shows(server: Connection):
    result = await server.call("optimize", {"target": "gemm", "size": "MINI", "iters": 1, "candidates": 3})
    report = result.structured_content
    rows = report["leaderboard"]
    assert not result.is_error and report["finish"]
    assert isinstance(report["machine_busy"], bool) and report["remeasured"] >= 0
    assert ("the machine was busy" in report["finish"]) == report["machine_busy"]
    if report["schedule"]:
        winner = rows[0]
        assert winner["schedule"] == report["schedule"] and winner["raced"] is True
        assert winner["speedup"] == pytest.approx(report["speedup"])
        assert (winner["spread"] or 0.0) == pytest.approx(report["spread"])
        assert f"`{report['schedule']}` won the racing finish at {report['speedup']:.2f}x" in report["finish"]
        rest = [row for row in rows if row["schedule"] != report["schedule"]]
    else:
        assert report["speedup"] == 1.0
        assert "the source order stays" in report["finish"] or "no schedule beat the baseline" in report["finish"]
        rest = rows
    assert [row["speedup"] or 0.0 for row in rest] == sorted((row["speedup"] or 0.0 for row in rest), reverse=True)
    assert all(row["speedup"] == row["first_speedup"] for row in rows if not row["raced"])
    assert all(row["verdict"] == "legal" for row in rows if row["raced"])


async def test_a_cancelled_optimize_stops_and_the_server_keeps_serving(server: Connection):
    first_evaluation = anyio.Event()

    async def record(value: float, total: float | None, message: str | None) -> None:
        first_evaluation.set()

    arguments = {"target": "gemm", "size": "MINI", "iters": 50, "candidates": 2}
    async with anyio.create_task_group() as calls:
        calls.start_soon(lambda: server.call("optimize", arguments, progress_callback=record))
        with anyio.fail_after(60):
            await first_evaluation.wait()
        calls.cancel_scope.cancel()
    with anyio.fail_after(30):
        while (board := await server.leaderboard())["status"] == "running":
            await anyio.sleep(0.05)
    assert board["status"] == "cancelled"
    assert 1 <= len(board["rows"]) < 10  # the evaluations under way when the cancellation came, not 50 turns' worth
    after = await server.call("check_legality", {"target": "gemm", "schedule": "parallelize(i)"})
    assert after.structured_content["verdict"] == "legal"


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("analyze", {"target": "gemmm"}, "unknown kernel `gemmm`; did you mean gemm"),
        ("check_legality", {"target": "gemm", "schedule": "tile(i, j"}, "schedule `tile(i, j` does not parse"),
        ("check_legality", {"target": "gemm", "schedule": "parallelize(x)"}, "unknown loop `x`"),
        ("evaluate", {"target": "gemm", "schedule": "parallelize(i)", "size": "HUGE"}, "size: must be one of MINI, SMALL"),
        ("show_code", {"target": "gemm", "schedule": "parallelize(k)"}, "is illegal; only a legal one has code"),
        ("optimize", {"target": "gemm", "backend": "mystery"}, "unknown backend `mystery`"),
        ("check_legality", {"target": "gemm"}, "schedule: required"),
    ],
)
async def test_bad_inputs_are_tool_errors_and_the_server_keeps_serving(server: Connection, tool, arguments, message):
    result = await server.call(tool, arguments)
    assert result.is_error and message in result.content[0].text
    kernels = await server.call("list_kernels", {})
    assert len(kernels.structured_content["kernels"]) == 30 + 66 + 2 + 6 + 11  # PolyBench, NumPy, sparse, graphs, fsm


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "evaluate",
            {"target": "gemm", "schedule": "", "size": "HUGE"},
            "size: must be one of MINI, SMALL, MEDIUM, LARGE, EXTRALARGE (got 'HUGE')",
        ),
        (
            "optimize",
            {"target": "gemm", "iters": "many"},
            "iters: input should be a valid integer, unable to parse string as an integer (got 'many')",
        ),
        (
            "optimize",
            {"target": "gemm", "iters": 0, "k": 99},
            "iters: input should be greater than or equal to 1 (got 0); k: input should be less than or equal to 8 (got 99)",
        ),
        ("evaluate", {"target": "gemm", "schedule": "", "args": ["n=4", 4]}, "args[1]: input should be a valid string (got 4)"),
        ("show_code", {"target": "gemm", "language": "rust"}, "language: must be one of c, mlir (got 'rust')"),
        ("check_legality", {"target": "gemm"}, "schedule: required"),
    ],
)
async def test_rejected_arguments_are_one_line_naming_the_field(server: Connection, tool, arguments, message):
    result = await server.call(tool, arguments)
    text = result.content[0].text
    assert result.is_error and text == f"Error executing tool {tool}: {message}"
    assert "\n" not in text and "pydantic" not in text and "type=" not in text


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("ingest", {"path": "kernels/polybench/gemm.py"}),
        ("ingest", {"path": "kernels/examples/../polybench/gemm.py"}),
        ("ingest", {"path": "/etc/passwd"}),
        ("analyze", {"target": "kernels/polybench/gemm.py:gemm"}),
    ],
)
async def test_paths_outside_the_root_are_refused(server: Connection, tool, arguments):
    result = await server.call(tool, arguments)
    assert result.is_error
    assert "is outside the directories this server may read" in result.content[0].text
    assert "kernels/examples" in result.content[0].text


async def test_files_under_the_root_are_ingested_and_analyzed(server: Connection):
    result = await server.call("ingest", {"path": "kernels/examples/user_kernels.py"})
    functions = {f["name"]: f for f in result.structured_content["functions"]}
    assert functions["row_norms"]["analyzable"] and functions["row_norms"]["target"] == "kernels/examples/user_kernels.py:row_norms"
    analysis = await server.call("analyze", {"target": functions["row_norms"]["target"]})
    assert analysis.structured_content["kernel"] == "row_norms"


async def test_a_user_kernel_is_measured_on_the_inputs_its_args_describe(server: Connection):
    arguments = {
        "target": "kernels/examples/user_kernels.py:lower_triangle_update",
        "schedule": "unroll(j, 4)",
        "args": ["n=64", "alpha=0.5", "x=f64[n]", "C=f64[n,n]"],
    }
    result = await server.call("evaluate", arguments)
    report = result.structured_content
    assert not result.is_error and report["verdict"] == "legal" and report["correct"] is True and report["speedup"] > 0
    missing = await server.call("evaluate", {**arguments, "args": None})
    assert missing.is_error and "needs inputs for: n, alpha, x, C" in missing.content[0].text


async def test_input_mistakes_name_the_tools_fields_not_the_clis_options(server: Connection):
    target = "kernels/examples/user_kernels.py:lower_triangle_update"
    missing = await server.call("evaluate", {"target": target, "schedule": "", "args": ["n=64", "x=f64[n]"]})
    text = missing.content[0].text
    assert missing.is_error and "--arg" not in text
    assert text.endswith('needs inputs for: alpha, C; add them to `args`: ["alpha=1.5", "C=f64[64,64]"]')
    suggested = json.loads(text.rsplit(": ", 1)[1])
    completed = await server.call("evaluate", {"target": target, "schedule": "", "args": ["n=64", "x=f64[n]", *suggested]})
    assert not completed.is_error and completed.structured_content["correct"] is True
    malformed = await server.call("evaluate", {"target": target, "schedule": "", "args": ["n64"]})
    assert malformed.is_error and "`args` entry `n64`: expected NAME=VALUE" in malformed.content[0].text
    inputs = ["n=64", "x=f64[n]", *suggested]
    sized = await server.call("evaluate", {"target": target, "schedule": "", "size": "MINI", "args": inputs})
    assert sized.is_error
    assert "`size` applies to bundled kernels; give user kernels their sizes with `args`" in sized.content[0].text


async def test_the_agent_and_the_server_describe_each_tool_the_same_way(server: Connection):
    served = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    for tool in agent_tools(resolve_target("gemm"), "MINI", "c", lambda schedule, evaluation: None):
        mcp_tool = served[tool.spec.name]
        assert tool.spec.description == mcp_tool.description
        for name, schema in tool.spec.parameters["properties"].items():
            assert mcp_tool.input_schema["properties"][name] == schema


async def test_swap_installs_the_verified_kernel_the_program_will_call(server: Connection):
    target = "kernels/examples/user_kernels.py:lower_triangle_update"
    inputs = ["n=64", "alpha=0.5", "x=f64[n]", "C=f64[n,n]"]
    result = await server.call("swap", {"target": target, "schedule": "parallelize(i)", "args": inputs})
    report = result.structured_content
    assert not result.is_error, result.content[0].text
    assert report["schedule"] == "parallelize(i)" and report["verified"] == "true" and Path(report["library"]).exists()
    store = open_store()  # the session's store (REPOOS_GRAPH), which the server inherited
    try:
        contract = store.get(VerifiedKernel, report["function"])
    finally:
        store.close()
    assert contract is not None and contract.schedule == "parallelize(i)"
    refused = await server.call("swap", {"target": "gemm", "schedule": "parallelize(k)", "size": "MINI"})
    assert refused.is_error and "was not installed: illegal" in refused.content[0].text


async def test_swap_without_a_schedule_keeps_the_stored_winner_and_a_slower_install_says_what_it_replaced(
    server: Connection,
):
    """An assistant's `swap` after `optimize` must not silently put the 1.00x baseline over the stored winner."""
    target = "kernels/examples/user_kernels.py:lower_triangle_update"
    inputs = ["n=64", "alpha=0.5", "x=f64[n]", "C=f64[n,n]"]
    first = await server.call("swap", {"target": target, "schedule": "parallelize(i)", "args": inputs})
    assert not first.is_error, first.content[0].text
    store = open_store()
    try:  # as if `optimize` had measured this winner far ahead of anything a rerun will measure
        contract = store.get(VerifiedKernel, first.structured_content["function"])
        assert contract is not None
        store.write(Batch(nodes=(dataclasses.replace(contract, speedup=1000.0),)))
    finally:
        store.close()
    kept = await server.call("swap", {"target": target, "schedule": "", "args": inputs})
    assert not kept.is_error, kept.content[0].text
    assert kept.structured_content["schedule"] == "parallelize(i)" and kept.structured_content["speedup"] == 1000.0
    assert kept.structured_content["incumbent"] == (
        "kept the stored winner `parallelize(i)` (1000.00x); name a schedule to install another"
    )
    replaced = await server.call("swap", {"target": target, "schedule": "interchange(i, j)", "args": inputs})
    assert not replaced.is_error, replaced.content[0].text
    assert replaced.structured_content["schedule"] == "interchange(i, j)"
    assert replaced.structured_content["incumbent"].startswith("replaced the stored kernel `parallelize(i)` (1000.00x at ")


async def test_a_numpy_program_is_evaluated_and_a_user_numpy_file_with_its_ranks_from_args(server: Connection):
    result = await server.call("evaluate", {"target": "numpy:softmax", "schedule": "parallelize(S0.i)", "size": "MINI"})
    report = result.structured_content
    assert not result.is_error and report["verdict"] == "legal" and report["correct"] is True
    arguments = {
        "target": "kernels/examples/numpy_layer.py:layer",
        "schedule": "",
        "args": ["x=f64[12,5]", "w=f64[5,3]", "b=f64[3]"],
    }
    user = await server.call("evaluate", arguments)
    assert not user.is_error and user.structured_content["correct"] is True, user.content[0].text


async def test_every_tool_models_a_numpy_function_with_the_ranks_its_args_give(server: Connection):
    """`ingest`, `analyze` and `check_legality` read the ranks from `args` as `evaluate` does: one model for all."""
    path, args = "kernels/examples/numpy_layer.py", ["x=f64[12,5]", "w=f64[5,3]", "b=f64[3]"]
    alone = await server.call("ingest", {"path": path})
    layer = {f["name"]: f for f in alone.structured_content["functions"]}["layer"]
    assert not layer["analyzable"]
    assert layer["reason"].startswith("the rank of array `x` is not known: give the inputs' shapes")
    given = await server.call("ingest", {"path": path, "args": args})
    layer = {f["name"]: f for f in given.structured_content["functions"]}["layer"]
    assert not given.is_error and layer["analyzable"], layer["reason"]
    analysis = await server.call("analyze", {"target": layer["target"], "args": args})
    assert not analysis.is_error and analysis.structured_content["kernel"] == "layer", analysis.content[0].text
    legality = await server.call("check_legality", {"target": layer["target"], "schedule": "", "args": args})
    assert not legality.is_error and legality.structured_content["legal"] is True, legality.content[0].text
    refused = await server.call("analyze", {"target": layer["target"]})
    assert refused.is_error and "the rank of array `x` is not known" in refused.content[0].text
