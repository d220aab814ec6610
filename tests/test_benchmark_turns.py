"""The benchmarks' timing in turns: every contender once a round, the order rotating, each after a collection."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from report import timed_in_turns


@pytest.fixture(autouse=True)
def small_heap():
    """The objects of every test this worker ran before, kept out of the collections: each turn collects the whole
    heap, and a test worker's heap is far larger than a benchmark's when it starts timing."""
    gc.freeze()
    yield
    gc.unfreeze()


def test_contenders_take_turns_each_round_led_by_the_next():
    order: list[str] = []
    calls = {name: (lambda name=name: order.append(name)) for name in ("orm", "fetch", "ours")}
    timings = timed_in_turns(calls, repeats=4, most_rounds=6)
    warm, rounds = order[:3], [order[3 + 3 * k : 6 + 3 * k] for k in range(len(order[3:]) // 3)]
    assert warm == ["orm", "fetch", "ours"]
    assert len(rounds) >= 4 and all(sorted(r) == ["fetch", "orm", "ours"] for r in rounds)
    assert [r[0] for r in rounds[:3]] == ["orm", "fetch", "ours"]  # no contender always runs first, or last
    assert {name: len(t.samples) for name, t in timings.items()} == {name: len(rounds) for name in calls}


def test_no_contender_pays_for_the_garbage_the_one_before_it_left():
    """A contender that leaves cycles behind: the next one's call starts with the young generation collected."""
    pending: list[int] = []

    def leaves_cycles() -> None:
        for _ in range(500):
            cycle: list = []
            cycle.append(cycle)

    calls = {"leaves cycles": leaves_cycles, "reads the collector": lambda: pending.append(gc.get_count()[0])}
    timed_in_turns(calls, repeats=3, most_rounds=5)
    assert pending and max(pending[1:]) < 50, pending


def test_a_held_context_wraps_each_timed_call_alone():
    """The engine's measurement lock, held by a benchmark: entered around every timed call, never around a warm-up."""
    events: list[str] = []

    class Held:
        def __enter__(self):
            events.append("enter")

        def __exit__(self, *exc):
            events.append("exit")

    timed_in_turns({"a": lambda: events.append("a"), "b": lambda: events.append("b")}, repeats=2, held=Held, most_rounds=4)
    assert events[:2] == ["a", "b"]  # warm-ups, outside it
    timed = events[2:]
    assert len(timed) % 3 == 0 and all(timed[k] == "enter" and timed[k + 2] == "exit" for k in range(0, len(timed), 3))
