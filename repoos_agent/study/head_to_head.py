"""Two winners of one kernel raced against each other, in the same run, on the same inputs.

Two searches of a kernel each end with a racing finish against their own baseline, minutes
apart, on a host whose speed drifts; the ratio of their speedups carries the noise of both
finishes. Whether one way of proposing (a mixture) lost to another (the heuristic alone) is
decided by racing the two winners head to head, interleaved, several times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repoos_agent.backends import build_baseline
from repoos_agent.backends.library import NativeKernel
from repoos_agent.errors import CompileError
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE, proved_build, python_original
from repoos_agent.measure.isolated import RaceRules, shared_worker
from repoos_agent.measure.original import NumpyOriginal
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target

NUMPY_ORIGINAL = "(the NumPy original)"
"""The schedule a NumPy kernel's record names when its search's finish kept the user's own code."""
RACES = 3
"""Head-to-head races; the median one is reported."""


@dataclass(frozen=True)
class Duel:
    """`second` against `first`: `ratio` is first's median time over second's (above 1, second is faster),
    from the median of `RACES` races; `spread` is the larger of the two contenders' spreads in that race.
    `outcome` is `ok`, `same` (one schedule: nothing to race), or why the race could not run."""

    first: str
    second: str
    ratio: float
    spread: float = 0.0
    outcome: str = "ok"
    message: str = ""

    @property
    def second_lost(self) -> bool:
        """Whether the second winner was slower than the first by more than the race's spread."""
        return self.outcome == "ok" and self.ratio < 1.0 - self.spread


def winner_contender(target: Target, signature: Signature, schedule: str) -> NativeKernel | NumpyOriginal:
    """What a record's schedule runs: the NumPy original, the native baseline (the identity, ``""``), or the
    schedule's build, proved again. `CompileError` when it no longer proves legal or does not build."""
    if schedule == NUMPY_ORIGINAL:
        original = python_original(target) if target.bundled is not None and target.bundled.suite == "numpy" else None
        if original is None:
            raise CompileError(f"`{target.label}` has no NumPy original")
        return original
    if not schedule:
        return build_baseline(target.kernel, signature)
    return proved_build(target, signature, schedule)


def compared_names(target: Target, values: dict[str, object]) -> tuple[str, ...]:
    """Every array argument and every returned value: what two contenders must agree on."""
    arrays = [name for name, value in values.items() if isinstance(value, np.ndarray)]
    return tuple(dict.fromkeys([*arrays, *(r.name for r in target.kernel.returns)]))


def race_winners(target: Target, size: str, first: str, second: str, seed: int = 0, timeout_s: float = 120.0) -> Duel:
    """Race the winner `second` against the winner `first` on the inputs of `size`, `RACES` times."""
    if first == second:
        return Duel(first, second, 1.0, outcome="same")
    values = target.inputs(size, seed)
    signature = Signature.of_values(target.kernel, values)
    try:
        contenders = [winner_contender(target, signature, schedule) for schedule in (first, second)]
    except CompileError as error:
        return Duel(first, second, math.nan, math.nan, "compile_error", str(error))
    rules = RaceRules(compared_names(target, values), REASSOCIATION_TOLERANCE_SCALE)  # either winner may sum in another order
    races = []
    for _ in range(RACES):
        result = shared_worker().race(contenders[0], contenders[1], values, rules, timeout_s)
        if result.outcome != "ok" or result.speedup is None:
            return Duel(first, second, math.nan, math.nan, result.outcome, result.message)
        races.append(result)
    middle = sorted(races, key=lambda race: race.speedup)[len(races) // 2]
    return Duel(first, second, middle.speedup, max(middle.baseline.spread, middle.candidate.spread))
