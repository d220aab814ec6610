"""One candidate evaluated as the search evaluates it: the config's size, compiler, seed and rules."""

from __future__ import annotations

from typing import Any

from repoos_agent.agent.search_config import SearchConfig
from repoos_agent.evaluate import Evaluation, evaluate_schedule
from repoos_agent.target import Target


def evaluate_candidate(target: Target, schedule: str, config: SearchConfig, **measuring: Any) -> Evaluation:
    """`schedule` evaluated as the search evaluates its candidates: at the config's size, with its compiler, seed,
    timeout and reassociation rule, and Z3's check of its loops deferred to the finish unless the config asks for it
    on every candidate. `measuring` passes `evaluate_schedule`'s `repeats`, `stop_below_speedup`, `measure` or
    `verify` on."""
    return evaluate_schedule(
        target,
        schedule,
        config.size,
        allow_reassociation=config.allow_reassociation,
        timeout_s=config.timeout_s,
        seed=config.seed,
        compiler=config.compiler,
        **{"verify": config.verify_every, **measuring},
    )
