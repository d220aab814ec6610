"""The track registry: each track a registration the front ends dispatch through, none known to ingest or the runtime,
the CLI, the MCP server or the TUI; a track registered by a test reaches them all."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import repoos_agent.tracks as tracks
from repoos_agent import cli
from repoos_agent.ingest import ingest_source
from repoos_agent.ingest.parse import text
from repoos_agent.mcp.fsm_tools import INSTRUCTIONS as FSM_INSTRUCTIONS
from repoos_agent.mcp.tabular_tools import INSTRUCTIONS as TABULAR_INSTRUCTIONS
from repoos_agent.tracks import Registration, Track, TrackOption, bench_track, registered_tracks
from tests.conftest import ROOT
from tests.mcp_client import connect
from tui import command as tui_command

APP = ROOT / "kernels/apps/revenue_app/main.py"
LOOPS = ROOT / "kernels/examples/user_kernels.py"
MACHINE = Registration(
    "tests.fixtures.machine_track.track",
    TrackOption(
        flag="--machine",
        metavar="NAME",
        value="machine",
        runs="a state machine",
        optimize_help="a state machine's step function (file.py:step_x): run it on machine NAME",
        tui_help="a state machine's step function (file.py:step_x): watch it run on machine NAME",
    ),
)
"""A track of state machines registered by these tests only: one folder, named by one `Registration` of `REGISTERED`."""


def test_one_registration_per_track_asked_in_order():
    assert [track.name for track in registered_tracks()] == ["tabular", "graphs", "fsm", "affine"]
    assert all(isinstance(track, Track) for track in registered_tracks())


def test_a_registered_claim_is_what_ingest_reports_before_the_loop_model(monkeypatch: pytest.MonkeyPatch):
    def claim(function, path: str) -> str | None:
        name = text(function.child_by_field_name("name"))
        return f"`{name}` of {path} steps a machine" if name.startswith("step") else None

    monkeypatch.setattr(tracks, "registered_tracks", lambda: (Track("fsm", claim=claim), *registered_tracks()))
    source = (
        "def step(x):\n    for i in range(3):\n        x[i] = 1.0\n\n\ndef fill(x):\n    for i in range(3):\n        x[i] = 1.0\n"
    )
    reports = {report.name: report for report in ingest_source(source, "machine.py", {"step": {"x": 1}, "fill": {"x": 1}})}
    assert (reports["step"].track, reports["step"].reason, reports["step"].kernel) == (
        "fsm",
        "`step` of machine.py steps a machine",
        None,
    )
    assert reports["fill"].track == "affine" and reports["fill"].kernel is not None


def test_an_orm_endpoint_is_benched_by_the_tabular_track_and_a_loop_by_the_loop_track():
    endpoint = bench_track(str(APP), "get_revenue", None)
    assert (endpoint.name, endpoint.bench_leg, endpoint.bench_output) == ("tabular", "repoos_agent.tabular.bench_leg", "json")
    loop = bench_track(str(LOOPS), "strided_scale", None)
    assert (loop.name, loop.bench_leg, loop.bench_output) == ("affine", "repoos_agent.runtime.bench_leg", "npz")


@pytest.fixture
def machine_track(monkeypatch: pytest.MonkeyPatch):
    """The test track registered as a track is: one `Registration` in `REGISTERED`, read afresh."""
    monkeypatch.setattr(tracks, "REGISTERED", (MACHINE, *tracks.REGISTERED))
    registered_tracks.cache_clear()
    yield
    registered_tracks.cache_clear()


def test_a_registered_track_is_offered_by_ingest_optimize_and_the_monitor(machine_track, tmp_path: Path, capsys):
    (report,) = ingest_source("def step_go(x):\n    return x\n", "machine.py", {})
    assert (report.track, report.reason) == ("machine", "`step_go` steps a state machine")
    log = tmp_path / "run.jsonl"
    assert cli.main(["optimize", "machine.py:step_go", "--machine", "traffic", "--log", str(log)]) == 0
    assert capsys.readouterr().out == "machine.py:step_go: stepped on machine traffic\n"
    with pytest.raises(SystemExit):
        cli.main(["optimize", "--help"])
    assert "--machine NAME" in capsys.readouterr().out
    assert tui_command.main(["machine.py:step_go", "--machine", "traffic"]) == 0
    assert capsys.readouterr().out == "watching machine.py:step_go on machine traffic\n"
    assert tui_command.main(["--replay", str(log), "--speed", "5"]) == 0  # the log names the track: its monitor replays
    assert capsys.readouterr().out == "replaying run_started, run_finished at 5x\n"
    assert tui_command.main(["--replay", str(log), "--machine", "traffic"]) == 2
    assert "--machine runs a state machine live; a replay needs no machine" in capsys.readouterr().err


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_registered_track_adds_its_tools_to_the_mcp_server(anyio_backend: str):
    serve = (
        "import repoos_agent.tracks as tracks; from repoos_agent.tracks import Registration, TrackOption; "
        f"tracks.REGISTERED = ({MACHINE!r}, *tracks.REGISTERED); "
        "from repoos_agent.mcp.command import main; raise SystemExit(main(['--root', 'kernels/examples']))"
    )
    async with connect([sys.executable, "-c", serve]) as server:
        tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
        # after the core tools, in the registry's order
        assert list(tools)[-4:] == ["step_machine", "optimize_endpoint", "optimize_branchy", "rewrite_menu"]
        step = tools["step_machine"]
        assert step.description == "Step the state machine `machine` `steps` times."
        assert step.input_schema["required"] == ["machine"] and set(step.output_schema["properties"]) == {"machine", "state"}
        result = await server.call("step_machine", {"machine": "traffic", "steps": 3})
        assert not result.is_error and result.structured_content == {"machine": "traffic", "state": "green"}
        states = (await server.session.read_resource("repoos://machine/states")).contents[0].text
        assert states == '["red", "green"]'
        track_paragraphs = f"\nA `step_*` function goes to `step_machine`.\n{TABULAR_INSTRUCTIONS}\n{FSM_INSTRUCTIONS}"
        assert server.instructions.endswith(track_paragraphs)
    assert server.transport_faults == []
