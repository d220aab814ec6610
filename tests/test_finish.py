"""The racing finish's rules on real contenders: a lead counts only beyond the noise, ties go by preference."""

from __future__ import annotations

from repoos_agent.agent.entry import Entry
from repoos_agent.agent.finish import IDENTITY, Contender, _decide, beats, ties, too_noisy_to_call
from repoos_agent.evaluate import Evaluation


def _contender(schedule: str, speedup: float, spread: float) -> Contender:
    race = Evaluation("gemm", "SMALL", schedule, "legal", "", correct=True, speedup=speedup, spread=spread, team=2)
    return Contender.raced(Entry(schedule, 0, 1, "heuristic", race), race)


def test_a_lead_counts_only_beyond_both_spreads_and_the_floor():
    steady = _contender("parallelize(i)", 1.50, 0.03)
    assert beats(steady, IDENTITY)  # 50% over the source order, its runs within ±3%
    assert not beats(_contender("parallelize(i)", 1.30, 0.40), IDENTITY)  # 30%, within its own ±40%
    assert not beats(_contender("parallelize(i)", 1.015, 0.0), IDENTITY)  # 1.5%: under the 2% floor
    assert not beats(steady, _contender("interchange(j, k)", 1.45, 0.05))  # 3.4%, within the other's ±5%
    assert beats(steady, _contender("interchange(j, k)", 1.20, 0.05))


def test_ties_go_to_the_stored_schedule_then_the_anchor_then_the_simplest():
    fastest = _contender("interchange(j, k); parallelize(i)", 2.00, 0.04)
    simplest = _contender("parallelize(i)", 1.96, 0.04)
    stored = _contender("tile(i, j, 32, 32); parallelize(i)", 1.95, 0.04)
    raced = [fastest, simplest, stored]
    assert ties(raced) == raced  # 2.6% apart at ±4%; the source order is beaten by all three
    assert _decide(raced, None, busy=False) == simplest
    assert _decide(raced, None, busy=False, anchor=fastest.schedule) == fastest
    assert _decide(raced, stored.schedule, busy=False, anchor=fastest.schedule) == stored


def test_only_a_lead_beyond_the_spread_replaces_the_stored_schedule_or_the_source_order():
    stored = _contender("parallelize(i)", 1.50, 0.03)
    faster = _contender("tile(i, j, 32, 32); parallelize(i)", 2.00, 0.03)
    assert _decide([stored, faster], stored.schedule, busy=False) == faster
    assert _decide([_contender("parallelize(i)", 1.01, 0.05)], None, busy=False) == IDENTITY


def test_a_tie_within_wide_spreads_is_raced_again_and_a_steady_one_is_not():
    assert too_noisy_to_call(ties([_contender("parallelize(i)", 2.0, 0.40), _contender("interchange(j, k)", 1.9, 0.35)]))
    assert not too_noisy_to_call(ties([_contender("parallelize(i)", 2.0, 0.02), _contender("interchange(j, k)", 1.99, 0.02)]))
    assert not too_noisy_to_call(ties([_contender("parallelize(i)", 2.0, 0.40)]))  # alone beside the beaten source order
