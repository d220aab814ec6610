"""Steering a running search: pause holds new evaluations back, cancel stops it with what it has."""

from __future__ import annotations

import threading
import time

import pytest

from repoos_agent.agent.control import SearchControl
from repoos_agent.agent.events import EventStream
from repoos_agent.agent.search import SearchConfig, optimize
from repoos_agent.errors import RepoosError
from repoos_agent.target import resolve_target


def _run_in_thread(config: SearchConfig, events: EventStream, control: SearchControl):
    results = []
    thread = threading.Thread(target=lambda: results.append(optimize(resolve_target("jacobi-2d"), config, events, control)))
    thread.start()
    return thread, results


def _past_its_first_evaluation(config: SearchConfig):
    """A search running in its own thread, once its first evaluation is in: (thread, results, events, control)."""
    events, control = EventStream(), SearchControl()
    first = threading.Event()
    events.subscribe(lambda e: first.set() if e.kind == "evaluation" else None)
    thread, results = _run_in_thread(config, events, control)
    assert first.wait(120)
    return thread, results, events, control


def test_cancel_stops_the_search_and_keeps_its_best():
    thread, results, events, control = _past_its_first_evaluation(SearchConfig(iters=50, candidates=2, size="MINI"))
    control.cancel()
    thread.join(60)
    assert not thread.is_alive()
    result = results[0]
    assert result.cancelled and result.evaluations < 20  # the heuristic proposes far more than 20 schedules for 50 turns
    assert not any(e.detail.get("race") for e in events.events)  # no racing finish after a cancel
    assert events.events[-1].kind == "run_finished" and events.events[-1].detail["cancelled"]


def test_pause_holds_evaluations_until_resumed():
    thread, _, events, control = _past_its_first_evaluation(SearchConfig(iters=50, candidates=1, size="MINI"))
    control.pause()
    time.sleep(1.0)  # let an evaluation already past its checkpoint finish
    paused_at = sum(e.kind == "evaluation" for e in events.events)
    time.sleep(1.5)
    assert sum(e.kind == "evaluation" for e in events.events) == paused_at
    control.resume()
    deadline = time.time() + 60
    while sum(e.kind == "evaluation" for e in events.events) == paused_at and time.time() < deadline:
        time.sleep(0.05)
    assert sum(e.kind == "evaluation" for e in events.events) > paused_at
    control.cancel()
    thread.join(60)
    assert not thread.is_alive()


def test_cancel_during_the_racing_finish_abandons_it():
    events, control = EventStream(), SearchControl()
    events.subscribe(lambda e: control.cancel() if e.detail.get("race") else None)
    thread, results = _run_in_thread(SearchConfig(iters=2, candidates=3, size="MINI"), events, control)
    thread.join(120)
    result = results[0]
    assert sum(bool(e.detail.get("race")) for e in events.events) <= 1  # the finalist being timed finishes; no other starts
    assert result.cancelled and events.events[-1].detail["cancelled"]


def test_a_failed_search_still_ends_its_run():
    events = EventStream()
    with pytest.raises(RepoosError, match="mystery"):
        optimize(resolve_target("gemm"), SearchConfig(backend="mystery", size="MINI"), events)
    assert [e.kind for e in events.events] == ["run_started", "run_finished"]
    assert "mystery" in events.events[-1].detail["failed"]
