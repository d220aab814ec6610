"""One leg of `repoos bench` for an fsm function, in its own process: N calls on the same inputs, figures on stdout.

Run as `python -m repoos_agent.fsm.bench_leg` with the request as JSON on stdin. The Python leg calls the function
as written; the swapped leg calls `swap` of it, which runs the stored winner (its `FsmKernel`, rebuilt from the
source and the record's steps) or, without a usable one, the original with a warning the route repeats. The inputs
are `--arg`'s (`data=bytes[100000]`) or, for a bundled kernel, its `init`'s at `--size`. The first call is untimed
(it loads the library); its outcome, saved as JSON, is what the parent compares exactly: the returned value, every
argument after the call, or the exception's type and message, each value with its type.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import numpy as np

from repoos_agent.catalog import bundled_kernels
from repoos_agent.fsm.compare import Outcome, outcome
from repoos_agent.fsm.swap import FsmSwapped
from repoos_agent.fsm.track import read_target
from repoos_agent.runtime.bench import BenchRequest, LegResult
from repoos_agent.runtime.bench_leg import leg_main, leg_result, time_calls
from repoos_agent.runtime.swap import swap


def run_fsm_leg(request: BenchRequest, leg: str, output: str) -> LegResult:
    """Call the function (the original, or swapped) `request.calls` times on the request's inputs; save the first
    call's outcome to `output`."""
    _, _, _, original, arguments = read_target(_label(request), request.args, request.size, request.seed)
    function: Callable[..., object] = original
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if leg == "swapped":
            function = swap(original, graph=request.graph)
        first = outcome(function, arguments)  # untimed: the swapped leg loads its library here
    Path(output).write_text(json.dumps(outcome_json(first)))

    def prepared(_: int) -> Callable[[], object]:
        copies = outcome_copies(arguments)
        return lambda: _call(function, copies)

    elapsed, cpu = time_calls(prepared, request.calls)
    return leg_result(leg, _route(leg, function, [str(warning.message) for warning in caught]), elapsed, cpu, request.calls)


def _label(request: BenchRequest) -> str:
    """The target as the track reads it: a bundled kernel by its name when no inputs are given, else the file's."""
    if not request.args:
        script = Path(request.script).resolve()
        for kernel in bundled_kernels("fsm"):
            if kernel.path.resolve() == script and kernel.function == request.function:
                return kernel.name
    return f"{request.script}:{request.function}"


def _call(function: Callable[..., object], arguments: tuple[object, ...]) -> None:
    with suppress(Exception):  # a call that raises is timed as the caller would meet it; the first one's is compared
        function(*arguments)


def outcome_copies(arguments: list[object]) -> tuple[object, ...]:
    """Fresh copies of the arguments a call may write, made outside the timing."""
    return tuple(bytearray(value) if isinstance(value, bytearray) else _array_copy(value) for value in arguments)


def _array_copy(value: object) -> object:
    return value.copy() if isinstance(value, np.ndarray) else value


def outcome_json(result: Outcome) -> dict[str, object]:
    """`result` as JSON that is equal for two outcomes exactly when `compare.difference` finds none: every value
    tagged with its type (True and 1, b"a" and "a" differ)."""
    return {
        "returned": _tagged(result.returned),
        "arguments": [_tagged(value) for value in result.arguments],
        "raised": list(result.raised) if result.raised is not None else None,
    }


def _tagged(value: object) -> dict[str, object]:
    if isinstance(value, np.ndarray):
        return {"type": "ndarray", "dtype": str(value.dtype), "values": value.tolist()}
    return {"type": type(value).__name__, "repr": repr(value)}


def _route(leg: str, function: Callable[..., object], fallbacks: list[str]) -> str:
    """What the leg's calls ran: the original, the stored winner, or the original and why it was not swapped."""
    if leg == "python":
        return "Python"
    if isinstance(function, FsmSwapped):
        return function.route
    return f"Python — not swapped: {fallbacks[0]}" if fallbacks else "Python — not swapped"


if __name__ == "__main__":
    sys.exit(leg_main(run_fsm_leg))
