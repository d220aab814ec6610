"""The fsm monitor, driven with Textual's Pilot: a live arena run shows each proposal's verdict and the race's
leaderboard with the crowned one marked, and its recorded log replays to the same screen."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from repoos_agent import cli
from repoos_agent.agent.events import EventStream, JsonlLog
from repoos_agent.fsm import optimize
from repoos_agent.fsm.optimize import heuristic_variants
from repoos_agent.fsm.track import read_target
from repoos_agent.store import FsmKernel, SQLiteStore
from tests.conftest import ROOT
from tests.test_fsm_arena import QUICK, differential
from tui.fsm_app import FsmMonitor
from tui.fsm_run import LiveBranchy
from tui.replay import Replay, read_run_log

pytestmark = pytest.mark.anyio
FIXTURE = f"{ROOT / 'tests/fixtures/fsm_functions.py'}:crc16_ccitt"
SIZE = (140, 30)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def checked_and_quick(monkeypatch):
    """Variants qualified by the differential check (the track's proof is another's work) and a short race."""
    monkeypatch.setattr(optimize, "qualifier_for", lambda original, baseline, samples: differential(original))
    real = optimize.run_arena
    monkeypatch.setattr(optimize, "run_arena", lambda *args, **kwargs: real(*args, **kwargs, rules=QUICK))


def _rows(app: FsmMonitor) -> list[list[str]]:
    board = app.query_one("#board")
    return [[str(cell) for cell in board.get_row_at(index)] for index in range(board.row_count)]


async def _wait_until(pilot, condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the monitor"
        await pilot.pause(0.05)


async def test_a_live_race_shows_verdicts_and_the_crowned_one_and_its_replay_the_same(checked_and_quick, tmp_path: Path):
    log_path, graph = tmp_path / "run.jsonl", tmp_path / "graph.sqlite"
    events = EventStream()
    log = JsonlLog(log_path)
    events.subscribe(log)
    target = read_target(FIXTURE, ["data=bytes[300]"])
    app = FsmMonitor(LiveBranchy(FIXTURE, target, heuristic_variants, str(graph), events))
    async with app.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: app.state == "finished")
        await pilot.pause(0.1)
        live = _rows(app)
        status = str(app.query_one("#status").render())
    log.close()
    proposed = [e.schedule for e in events.events if e.kind == "proposal"]
    verdicts = {e.schedule: e.detail["verdict"] for e in events.events if e.kind == "verification"}
    finished = next(e for e in events.events if e.kind == "run_finished")
    by_label = {row[1]: row for row in live}
    assert set(by_label) == {"baseline", *proposed}
    for label in proposed:
        assert by_label[label][2] == verdicts[label]
        assert (by_label[label][3] != "-") == (verdicts[label] == "qualified")
    assert [row[1] for row in live if row[0] == "*"] == [finished.schedule]
    raced = [row for row in live if row[3] != "-"]
    assert raced == live[: len(raced)]  # the racers first, fastest median first
    medians = [float(row[3].removesuffix(" ms")) for row in raced]
    assert medians == sorted(medians)
    assert f"crowned {finished.schedule}" in status
    store = SQLiteStore(graph)
    assert store.get(FsmKernel, FIXTURE).steps == ("" if finished.schedule == "baseline" else finished.schedule)
    store.close()

    replayed = FsmMonitor(Replay(read_run_log(log_path), speed=1000))
    async with replayed.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: replayed.state == "replayed")
        await pilot.pause(0.1)
        assert _rows(replayed) == live


async def test_a_refused_function_is_a_notification_and_no_race(tmp_path: Path):
    target = read_target(f"{ROOT / 'tests/fixtures/fsm_functions.py'}:table_lookup", ["data=bytes[8]"])
    app = FsmMonitor(LiveBranchy("table_lookup", target, heuristic_variants, str(tmp_path / "g.sqlite")))
    async with app.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: app.state == "failed")
        assert "`table_lookup` is not modelled by the fsm track: a dict" in app.failure
        assert [row[1] for row in _rows(app)] == ["baseline"]


@pytest.mark.slow  # every heuristic variant of crc32 qualified: the slow set runs it
def test_repoos_tui_replays_an_fsm_log_in_the_fsm_monitor(tmp_path: Path, monkeypatch, capsys):
    log = tmp_path / "run.jsonl"
    assert cli.main(["optimize", "fsm:crc32", "--size", "MINI", "--graph", str(tmp_path / "g"), "--log", str(log)]) == 0
    shown: list[object] = []
    monkeypatch.setattr(FsmMonitor, "run", lambda self: shown.append(self.feed))
    assert cli.main(["tui", "--replay", str(log), "--speed", "100"]) == 0
    [feed] = shown
    assert isinstance(feed, Replay) and feed.log.events[0].detail["track"] == "fsm"


@pytest.mark.slow  # waits for a whole race
async def test_quit_pressed_twice_during_a_race_waits_for_it_once_and_exits_cleanly(checked_and_quick, tmp_path: Path):
    target = read_target(FIXTURE, ["data=bytes[300]"])
    app = FsmMonitor(LiveBranchy(FIXTURE, target, heuristic_variants, str(tmp_path / "graph.sqlite"), EventStream()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.press("q")
        await _wait_until(pilot, lambda: not app.is_running)
    assert app.return_code == 0
