"""The tabular monitor, driven with Textual's Pilot against the real MariaDB: live runs, replays, refusals, no password."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from repoos_agent.agent.events import TABULAR_KINDS, EventStream, JsonlLog
from repoos_agent.store import SQLiteStore, TabularKernel
from repoos_agent.tabular.optimize import REPEATS
from tui.replay import Replay, read_run_log
from tui.tabular_app import TabularMonitor
from tui.tabular_run import LiveEndpoint

pytestmark = pytest.mark.anyio
APP = "kernels/apps/revenue_app/main.py"
SIZE = (80, 24)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _screen(app: TabularMonitor) -> str:
    """The terminal as the user sees it (the screen on top, composited, notifications included)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def _shown(app: TabularMonitor) -> dict[str, object]:
    """What the panes show, to compare a live run with its replay."""
    race = app.query_one("#race")
    return {
        "query": str(app.query_one("#query").render()),
        "race": [[str(cell) for cell in race.get_row_at(index)] for index in range(race.row_count)],
        "outcome": str(app.query_one("#outcome").render()),
    }


async def _wait_until(pilot, condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the monitor"
        await pilot.pause(0.05)


def _expected_rows(app, min_cancelled: float) -> int:
    main, database = app
    with database.SessionLocal() as db:
        return len(main.get_revenue(db, min_cancelled=min_cancelled))


async def test_a_live_run_shows_the_sql_rows_timings_and_speedup_and_its_replay_the_same(app, server, tmp_path: Path) -> None:
    log_path, graph = tmp_path / "run.jsonl", tmp_path / "graph.sqlite"
    events = EventStream()
    log = JsonlLog(log_path)
    events.subscribe(log)
    monitor = TabularMonitor(LiveEndpoint(APP, "get_revenue", server.url(), {"min_cancelled": 30}, str(graph), events))
    async with monitor.run_test(size=SIZE) as pilot:
        # the store's line is painted a refresh after the board learns of it, and the run ends after the store:
        # wait for both, as the user sees them
        await _wait_until(pilot, lambda: monitor.state == "finished" and "stored in the graph store" in _screen(monitor))
        board, screen = monitor.board, _screen(monitor)
        assert monitor.state == "finished"
        assert board.rows_compared == _expected_rows(app, 30) > 0
        assert "%(min_cancelled)s" in board.sql and "SELECT" in screen and "%(min_cancelled)s" in screen
        assert f"verified: {board.rows_compared} rows equal to the ORM's" in screen
        assert [len(board.samples[key]) for key in ("orm_s", "fast_s")] == [REPEATS, REPEATS]
        orm_row, fast_row = _shown(monitor)["race"]
        assert orm_row[0] == "ORM" and fast_row[0] == "fast path" and orm_row[3] == fast_row[3] == f"{REPEATS}/{REPEATS}"
        assert orm_row[1].endswith(" ms") and fast_row[1].endswith(" ms") and orm_row[2].startswith("±")
        assert monitor.result is not None and f"speedup {monitor.result.speedup:.2f}x over the ORM" in screen
        assert "stored in the graph store" in screen and "30" not in board.sql
        assert server.password not in screen and "***" in screen
        live = _shown(monitor)
        await pilot.press("q")
    log.close()
    assert monitor.return_value is monitor.result
    store = SQLiteStore(graph)
    (record,) = store.all(TabularKernel)
    store.close()
    assert record.function.endswith("main.py:get_revenue") and record.rows_compared == board.rows_compared

    logged = log_path.read_text()
    assert server.password not in logged and "***" in logged
    kinds = [json.loads(line)["kind"] for line in logged.splitlines()]
    assert kinds[0] == "run_started" and kinds[-2:] == ["run_finished", "contract_stored"]
    assert set(kinds[1:-2]) == set(TABULAR_KINDS) - {"contract_stored"} and kinds.count("race_sample") == REPEATS

    replay = TabularMonitor(Replay(read_run_log(log_path), speed=1000.0))
    async with replay.run_test(size=SIZE) as pilot:
        await replay.workers.wait_for_complete()
        await pilot.pause()
        assert replay.state == "replayed" and _shown(replay) == live
        assert replay.board.stored == board.stored and server.password not in _screen(replay)


async def test_a_wrong_password_is_a_notification_without_it(app, server) -> None:
    wrong = server.url().replace(server.password, "not-the-password")
    monitor = TabularMonitor(LiveEndpoint(APP, "get_revenue", wrong))
    async with monitor.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: monitor.state == "failed")
        await pilot.pause()
        screen = _screen(monitor)
        assert monitor.failure is not None and monitor.failure.startswith("--db mysql+pymysql://")
        assert "the run failed" in screen and "Access denied" in screen
        assert [n.title for n in monitor._notifications] == ["the run failed"]
        assert "not-the-password" not in screen + monitor.failure and "Traceback" not in screen
        assert monitor.board.stored is None


async def test_a_refused_chain_is_a_notification_naming_its_line(server, tmp_path: Path) -> None:
    path = tmp_path / "endpoint.py"
    path.write_text("def endpoint(db):\n    rows = db.query(M).all()\n    return rows\n")
    monitor = TabularMonitor(LiveEndpoint(str(path), "endpoint", server.url()))
    async with monitor.run_test(size=SIZE) as pilot:
        await _wait_until(pilot, lambda: monitor.state == "failed")
        await pilot.pause()
        assert monitor.failure is not None and "endpoint.py:2:" in monitor.failure
        assert "must be one `return`" in _screen(monitor) and monitor.board.sql == ""
        assert [n.message for n in monitor._notifications] == [monitor.failure]


async def test_optimize_log_replays_the_figures_the_cli_printed(app, server, tmp_path: Path, repoos_command) -> None:
    log_path = tmp_path / "run.jsonl"
    command = [*repoos_command, "optimize", f"{APP}:get_revenue", "--db", server.url(), "--graph", str(tmp_path / "g.sqlite")]
    done = subprocess.run([*command, "--json", "--log", str(log_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert server.password not in log_path.read_text()
    replay = TabularMonitor(Replay(read_run_log(log_path), speed=1000.0))
    async with replay.run_test(size=SIZE) as pilot:
        await replay.workers.wait_for_complete()
        await pilot.pause()
        board, screen = replay.board, _screen(replay)
        assert board.rows_compared == report["rows_compared"] and board.sql == " ".join(report["sql"].split())
        assert f"speedup {report['speedup']:.2f}x over the ORM" in screen
        assert board.timing("orm_s").median_s == pytest.approx(report["orm_s"])
        assert board.timing("fast_s").median_s == pytest.approx(report["fast_s"])
        assert board.stored is not None and server.password not in screen


def test_tui_db_errors_are_one_line_before_any_screen(repoos_command: list[str]) -> None:
    url = "mysql+pymysql://app:hunter2-secret@127.0.0.1:1/app"
    no_function = subprocess.run([*repoos_command, "tui", APP, "--db", url], capture_output=True, text=True, timeout=60)
    assert no_function.returncode == 2 and "Traceback" not in no_function.stderr
    assert no_function.stderr.strip() == f"repoos: error: `{APP}`: give the endpoint as path/to/app.py:function with --db"
    both = subprocess.run([*repoos_command, "tui", "--replay", "run.jsonl", "--db", url], capture_output=True, text=True)
    assert both.returncode == 2 and "a replay needs no database" in both.stderr and "hunter2" not in both.stderr
