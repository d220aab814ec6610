"""The search monitor, driven as a user would with Textual's Pilot, on real heuristic searches of 2mm at MINI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from textual.widgets import Static

from repoos_agent.agent.events import Event, EventStream, JsonlLog
from repoos_agent.agent.search import SearchConfig
from repoos_agent.store import open_store
from repoos_agent.store.records import VerifiedKernel
from repoos_agent.target import resolve_target
from tui.app import LiveSearch, Replay, SearchMonitor
from tui.detail import DetailPane
from tui.help import HelpScreen
from tui.leaderboard import Leaderboard
from tui.replay import RunLog, RunLogError, read_run_log
from tui.target_actions import TargetActions

from .fake_llm_servers import FakeLLMServer, openai_answer

pytestmark = pytest.mark.anyio
SIZE = (80, 24)  # the smallest terminal the monitor promises to stay readable in
RECORDED_GEMM = Path(__file__).parent / "fixtures" / "gemm-MEDIUM-heuristic.jsonl"
"""A real heuristic search of gemm at MEDIUM (the eval-medium study's log): 12 evaluations, most sharing a long start."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _monitor(config: SearchConfig, events: EventStream | None = None) -> SearchMonitor:
    target = resolve_target("2mm")
    actions = TargetActions(target, config)
    return SearchMonitor(LiveSearch(target, config, events or EventStream()), actions.code, actions.save_best)


def _cells(app: SearchMonitor) -> list[list[str]]:
    table = app.query_one(Leaderboard)
    return [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]


def _speedup(cell: str) -> float:
    return float(cell.rstrip("x")) if cell != "-" else 0.0


def _screen_lines(app: SearchMonitor) -> list[str]:
    """The terminal's lines as the user sees them (the screen on top, composited)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def _replayed(app: SearchMonitor, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


def _detail_text(app: SearchMonitor) -> str:
    return str(app.query_one(DetailPane).query_one("#detail-text").render())


GENERATION_WAIT_S = 240.0
"""How long the code view may take to generate a schedule's code: a wait for work, not a speed to meet."""


async def _wait_until(pilot, condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the monitor"
        await pilot.pause(0.05)


async def _settled_count(pilot, app: SearchMonitor, quiet_s: float = 1.5, timeout_s: float = 60.0) -> int:
    """The evaluation count once it has not changed for `quiet_s` (a loaded machine may take a while to finish one)."""
    deadline = time.monotonic() + timeout_s
    count, since = app.board.evaluations, time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "evaluations never stopped"
        await pilot.pause(0.1)
        if app.board.evaluations != count:
            count, since = app.board.evaluations, time.monotonic()
    return count


@pytest.mark.slow  # end to end: the slow set runs it
async def test_live_search_fills_a_sorted_leaderboard_and_its_replay_shows_the_same(tmp_path: Path) -> None:
    log_path = tmp_path / "run.jsonl"
    events = EventStream()
    log = JsonlLog(log_path)
    events.subscribe(log)
    app = _monitor(SearchConfig(iters=2, candidates=3, size="MINI"), events)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        evaluations = [e for e in events.events if e.kind == "evaluation" and not e.detail.get("race")]
        # The search's events reach the app as messages: on a loaded machine some are still queued when the worker ends.
        await _wait_until(pilot, lambda: app.state == "finished" and len(_cells(app)) == len(evaluations))
        rows = _cells(app)
        assert len(rows) == len(evaluations) >= 4
        speedups = [_speedup(row[4]) for row in rows]
        assert speedups == sorted(speedups, reverse=True)
        assert [row[0] for row in rows] == [str(rank) for rank in range(1, len(rows) + 1)]
        assert app.state == "finished"
        status = str(app.query_one("#status").render())
        assert "2mm MINI" in status and f"{len(evaluations)} evaluations" in status and "turn 2/2" in status

        await pilot.press("down", "down")  # the third-ranked row: its own feedback, not the leader's
        await pilot.pause()
        third = app.query_one(Leaderboard).selected
        assert third is not None and third.key == app.board.ranked()[2].key
        assert third.event.feedback and third.event.feedback.split(".")[0] in _detail_text(app)
        assert third.event.schedule in _detail_text(app)

        await pilot.press("enter")
        await _wait_until(pilot, lambda: getattr(app.screen, "generated", None) is not None)
        language, code = app.screen.generated
        assert language == "c" and "#include" in code and "for (" in code
        await pilot.press("c")
        await _wait_until(pilot, lambda: app.screen.generated is not None and app.screen.generated[0] == "mlir")
        assert "func.func" in app.screen.generated[1] and "scf.for" in app.screen.generated[1]
        await pilot.press("escape")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = "\n".join(str(text.content) for text in app.screen.query(Static))
        assert "↑ ↓" in shown and "?" in shown and "cancel the search cleanly and quit" in shown
        await pilot.press("escape")

        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        saved = [line for line in app.board.log if " saved: " in line or "nothing to save" in line]
        assert saved, list(app.board.log)[-3:]
        best = app.board.best_to_save()
        if best is not None:  # a schedule beat the baseline: it is now the function's contract in the graph store
            store = open_store()
            try:
                contracts = [c for c in store.all(VerifiedKernel) if c.function.endswith("k2mm.py:k2mm")]
            finally:
                store.close()
            assert "VerifiedKernel" in saved[-1] and [c.schedule for c in contracts] == [best.schedule]
        screenshot = app.save_screenshot("tui-final.svg", str(tmp_path))
        live_rows = _cells(app)
    log.close()
    assert Path(screenshot).read_text().startswith("<svg")

    replay = SearchMonitor(Replay(read_run_log(log_path), speed=1000.0))
    async with replay.run_test(size=SIZE) as pilot:
        await replay.workers.wait_for_complete()
        await pilot.pause()
        assert _cells(replay) == live_rows
        assert replay.state == "replayed"
        assert replay.board.finished is not None and replay.board.finished.schedule == app.board.finished.schedule


@pytest.mark.slow  # end to end: the slow set runs it
async def test_pause_stops_new_evaluations_and_quit_cancels_the_search() -> None:
    app = _monitor(SearchConfig(iters=20, candidates=1, size="MINI"))
    async with app.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: app.board.evaluations >= 1)
        await pilot.press("p")
        assert app.control.paused and app.state == "paused"
        paused_at = await _settled_count(pilot, app)  # an evaluation already past its checkpoint finishes
        await pilot.pause(2.0)
        assert app.board.evaluations == paused_at
        assert "│ paused" in str(app.query_one("#status").render())
        await pilot.press("q")
        await app.workers.wait_for_complete()
    result = app.return_value
    assert result is not None and result.cancelled
    assert result.evaluations == paused_at < 18  # the full search measures 18
    assert app.board.finished is not None and app.board.finished.detail["cancelled"]


async def test_an_llm_run_shows_its_tokens_and_why_a_schedule_is_illegal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    replies = [
        openai_answer(
            "<schedule>parallelize(k)</schedule><schedule>parallelize(i)</schedule>", prompt_tokens=900, completion_tokens=40
        ),
        openai_answer("<done/>", prompt_tokens=1000, completion_tokens=3),
    ]
    with FakeLLMServer(replies) as server:
        config = SearchConfig(backend="openai:test-model", base_url=f"{server.url}/v1", iters=3, candidates=2, size="MINI")
        target = resolve_target("gemm")
        app = SearchMonitor(LiveSearch(target, config))
        async with app.run_test(size=SIZE) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            status = str(app.query_one("#status").render())
            assert "openai:test-model" in status and "tokens 1900 in, 43 out" in status
            illegal = next(index for index, row in enumerate(app.board.ranked()) if row.event.verdict == "illegal")
            for _ in range(illegal):
                await pilot.press("down")
            await pilot.pause()
            assert "illegal" in _detail_text(app) and "loop `k` cannot run parallel" in _detail_text(app)


async def test_rows_that_share_a_long_start_read_differently_at_80_columns() -> None:
    app = SearchMonitor(Replay(read_run_log(RECORDED_GEMM), speed=1000.0))
    async with app.run_test(size=SIZE) as pilot:
        await _replayed(app, pilot)
        width = app.query_one(Leaderboard).ordered_columns[2].width
        schedules = [row.schedule for row in app.board.ranked()]
        cells = [row[2] for row in _cells(app)]
        # What the issue saw: clipped at the column's width, 9 of the 12 rows read `distribute(S0, S1); t…`.
        assert sum(schedule.startswith(schedules[0][: width - 1]) for schedule in schedules) == 9
        assert len(set(cells)) == len(cells) == len(set(schedules))
        assert all(len(line) <= width for cell in cells for line in cell.splitlines())
        leader, twin = (cells[schedules.index(s)] for s in schedules if "4, 256, 44)" in s and "vectorize" not in s)
        assert "tile(…, 4, 256, 44)" in leader and "parallelize(S1.i_t)" in leader  # the tile sizes and the parallel loop
        assert "tile(…, 4, 256, 44)" in twin and "promote(S1.k)" in twin and "parallelize" not in twin
        screen = "\n".join(_screen_lines(app))
        assert "… tile(…, 4, 256, 44)" in screen and "… tile(…, 4, 512, 44)" in screen


async def test_a_wide_terminal_widens_the_event_log() -> None:
    widths, finished = {}, {}
    for size in (SIZE, (160, 40)):
        app = SearchMonitor(Replay(read_run_log(RECORDED_GEMM), speed=1000.0))
        async with app.run_test(size=size) as pilot:
            await _replayed(app, pilot)
            # The replay's last events reach the app as queued messages: a loaded machine may draw them after the worker ends.
            await _wait_until(pilot, lambda shown=app: any("run finished" in line for line in _screen_lines(shown)))
            widths[size] = (app.query_one("#log").size.width, app.query_one(DetailPane).size.width)
            finished[size] = next(line for line in _screen_lines(app) if "run finished" in line)
    (log_80, detail_80), (log_160, detail_160) = widths[SIZE], widths[(160, 40)]
    assert log_160 >= 1.8 * log_80 and detail_160 >= 1.8 * detail_80  # both panes share the width, neither stays fixed
    assert "run finished: best di" in finished[SIZE] and "run finished: best distribute(S0, S1); tile(" in finished[(160, 40)]


async def test_the_code_view_opens_at_the_loop_nest() -> None:
    actions = TargetActions(resolve_target("gemm"), SearchConfig(size="MEDIUM"))
    app = SearchMonitor(Replay(read_run_log(RECORDED_GEMM), speed=1000.0), actions.code)
    async with app.run_test(size=SIZE) as pilot:
        await _replayed(app, pilot)
        await pilot.press("enter")  # the leader: a parallel, register-tiled schedule
        await pilot.pause(1.2)  # the status bar's one-second tick, under the code view, updates the monitor
        for language, loop in (("c", "for ("), ("mlir", "scf.")):
            # Generating the code (isl's AST, MLIR's lowering) is real work: under a loaded machine it took over a minute.
            await _wait_until(
                pilot,
                lambda wanted=language: app.screen.generated is not None and app.screen.generated[0] == wanted,
                timeout_s=GENERATION_WAIT_S,
            )
            # The code arrives before the view has scrolled to the loops: a loaded machine draws the top first.
            await _wait_until(pilot, lambda wanted=loop: wanted in _opened_at(app))
            lines = _screen_lines(app)
            shown = _opened_at(app)
            assert loop in shown, shown
            assert "static inline" not in "\n".join(lines) and "generated" not in shown  # no helpers, no header
            await pilot.press("c")
        await _wait_until(pilot, lambda: app.screen.generated is not None and app.screen.generated[0] == "c")
        await pilot.press("home")  # the row's facts and the helpers are a scroll away
        # The scroll is drawn on a later frame: a loaded machine may not have drawn it when the key returns.
        await _wait_until(pilot, lambda: "z3 verified: true" in "\n".join(_screen_lines(app)))


def _opened_at(app: SearchMonitor) -> str:
    """The three lines under the code view's "opened at the loops" line, or nothing before it shows."""
    lines = _screen_lines(app)
    top = next((number for number, line in enumerate(lines) if "opened at the loops" in line), None)
    return "" if top is None else "\n".join(lines[top + 1 : top + 4])


def _scripted(*events: Event) -> Replay:
    """A run told event by event, as the search emits them."""
    started = Event("run_started", "r1", time=1.0, detail={"target": "gemm", "size": "MINI", "config": {"backend": "heuristic"}})
    return Replay(RunLog("scripted", (started, *events), 1), speed=1000.0)


def _evaluation(schedule: str, speedup: float | None, spread: float | None, **detail: object) -> Event:
    verdict = "legal" if speedup else "illegal"
    return Event(
        "evaluation",
        "r1",
        time=2.0,
        dialogue=0,
        turn=1,
        agent="heuristic",
        schedule=schedule,
        verdict=verdict,
        speedup=speedup,
        spread=spread,
        verified="true" if speedup else None,
        detail=dict(detail),
    )


async def test_a_baseline_win_says_what_the_race_measured() -> None:
    replay = _scripted(
        _evaluation("parallelize(i)", 1.28, 0.30),  # a noisy first measurement
        _evaluation("tile(i, j, 32, 32)", 1.05, 0.05),
        _evaluation("parallelize(k)", None, None),
        _evaluation("parallelize(i)", 0.85, 0.03, race=True),
        _evaluation("tile(i, j, 32, 32)", 1.02, 0.04, race=True),  # within its spread of 1x: a tie, and the baseline is simpler
        Event("run_finished", "r1", time=3.0, speedup=1.0, spread=0.0, detail={"evaluations": 3, "cancelled": False}),
    )
    app = SearchMonitor(replay)
    async with app.run_test(size=SIZE) as pilot:
        await _replayed(app, pilot)
        label = str(app.query_one("#best-label").render())
        assert label == (
            "best 1.28x in 3 evaluations\nrace winner: the baseline\n"
            "re-measured #1 0.85x ±3%, #2 1.02x ±4%: none beat 1x beyond the spread"
        )
        screen = "\n".join(_screen_lines(app))
        assert "race winner: the baseline" in screen and "the spread" in screen  # all of it, even at 80x24


async def test_the_status_line_says_when_the_machine_was_busy() -> None:
    finish = Event("run_finished", "r1", time=3.0, schedule="tile(i, j, 32, 32)", speedup=1.4, spread=0.05, detail={})
    runs = {
        "busy evaluation, still running": [_evaluation("tile(i, j, 32, 32)", 1.4, 0.05, machine_busy=True)],
        "busy finish": [_evaluation("tile(i, j, 32, 32)", 1.4, 0.05), replace(finish, detail={"machine_busy": True})],
        "quiet": [_evaluation("tile(i, j, 32, 32)", 1.4, 0.05, machine_busy=True), replace(finish, detail={"machine_busy": False})],
        "events without the flag": [_evaluation("tile(i, j, 32, 32)", 1.4, 0.05), finish],
    }
    shown = {}
    for name, events in runs.items():
        app = SearchMonitor(_scripted(*events))
        async with app.run_test(size=SIZE) as pilot:
            await _replayed(app, pilot)
            shown[name] = "machine busy" in _screen_lines(app)[0]
    assert shown == {"busy evaluation, still running": True, "busy finish": True, "quiet": False, "events without the flag": False}


def test_a_bad_run_log_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    started = {"kind": "run_started", "run": "r1", "time": 1.0, "detail": {"target": "2mm"}}
    path.write_text(json.dumps(started) + "\n{not json\n")
    with pytest.raises(RunLogError, match=r"run\.jsonl:2: not JSON"):
        read_run_log(path)
    path.write_text(json.dumps({**started, "kind": "lunch"}) + "\n")
    with pytest.raises(RunLogError, match=r"run\.jsonl:1: event kind 'lunch' is not one of"):
        read_run_log(path)


def test_tui_command_errors_are_one_line_before_any_screen(repoos_command: list[str], tmp_path: Path) -> None:
    missing = subprocess.run([*repoos_command, "tui", "--replay", str(tmp_path / "none.jsonl")], capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"repoos: error: {tmp_path / 'none.jsonl'}: No such file or directory"
    neither = subprocess.run([*repoos_command, "tui"], capture_output=True, text=True)
    assert neither.returncode == 2 and "give a TARGET to search, or --replay RUN.jsonl" in neither.stderr
    entry_point = subprocess.run([sys.executable, "-m", "tui.command", "gemm", "--size", "HUGE"], capture_output=True, text=True)
    assert entry_point.returncode == 2 and "unknown size `HUGE`" in entry_point.stderr
    assert "Traceback" not in missing.stderr + neither.stderr + entry_point.stderr


async def test_saving_the_monitors_best_stores_it_once_z3_has_checked_its_loops():
    # A search's first looks defer Z3 to the finish; the monitor's save evaluates the schedule again, and the store
    # keeps only what Z3 checked, so that evaluation must check it (it was refused as `z3: deferred` before).
    actions = TargetActions(resolve_target("atax"), SearchConfig(size="MINI"))
    said = actions.save_best(SimpleNamespace(schedule="parallelize(S0.i)", speedup=1.5, spread=0.1))
    assert said.startswith("`parallelize(S0.i)` is now the VerifiedKernel of ") and said.endswith("atax.py:atax (1.50x)")
