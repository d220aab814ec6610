"""One leg of `repoos bench`, in its own process: make the inputs, call N times, report figures on stdout.

Run as `python -m repoos_agent.runtime.bench_leg` with the request as JSON on stdin (where a `--db`
password is not on any command line); the parent reads the last stdout line. `time_calls`,
`leg_result` and `leg_main` are shared with the tabular track's leg.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import fresh_copy
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.measure.original import warm_up
from repoos_agent.runtime.bench import BenchRequest, LegResult
from repoos_agent.runtime.swap import Accelerated
from repoos_agent.target import resolve_target


def _inputs(request: BenchRequest, target) -> dict[str, object]:
    """`--arg` specs when given; else the bundled kernel's own init at the size class (SMALL by default)."""
    if request.args:
        return target.inputs(None, request.seed)
    script = Path(request.script).resolve()
    for kernel in bundled_kernels():
        if kernel.path.resolve() == script:
            return kernel.inputs((request.size or "SMALL").upper())
    raise RepoosError(f"{request.script} is not a bundled kernel: give its inputs with --arg NAME=SPEC")


def run_leg(request: BenchRequest, leg: str, output: str) -> LegResult:
    target = resolve_target(f"{request.script}:{request.function}", [parse_arg_spec(a) for a in request.args])
    values = _inputs(request, target)
    function = target.python_function()
    route = "Python"
    if leg == "python":
        warm_up(function, values)  # untimed, as the swapped leg's first call is: a Numba original compiles now
    else:
        accelerated = Accelerated(function, request.graph)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            accelerated(**fresh_copy(values))  # untimed: resolves the contract or builds the baseline, loads the library
        route = accelerated.route
        if caught:
            route += f" — fell back: {caught[0].message}"
        function = accelerated
    first = fresh_copy(values)

    def prepared(call: int) -> Callable[[], object]:
        arguments = first if call == 0 else fresh_copy(values)
        return lambda: function(**arguments)

    elapsed, cpu = time_calls(prepared, request.calls)
    np.savez(output, **{name: value for name, value in first.items() if isinstance(value, np.ndarray)})
    return leg_result(leg, route, elapsed, cpu, request.calls)


def time_calls(prepared: Callable[[int], Callable[[], object]], calls: int) -> tuple[float, float]:
    """Wall and CPU seconds spent in the calls `prepared(0)`, …, `prepared(calls - 1)` return: each call's
    preparation (fresh inputs, an emptied identity map) is outside the timing."""
    elapsed = cpu = 0.0
    for index in range(calls):
        call = prepared(index)
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        call()
        elapsed += time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def leg_result(leg: str, route: str, elapsed: float, cpu: float, calls: int) -> LegResult:
    """The leg's figures, with this process's peak resident memory."""
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return LegResult(leg, route, elapsed / calls * 1e3, peak_mb, 100 * cpu / elapsed if elapsed > 0 else 0.0, calls)


def leg_main(run: Callable[[BenchRequest, str, str], LegResult]) -> int:
    """A leg process: the request from stdin, `run` on it, its figures as the last stdout line; a user's mistake
    is one line on stderr and exit code 2."""
    message = json.loads(sys.stdin.read())
    try:
        request = BenchRequest(**{**message["request"], "args": tuple(message["request"]["args"])})
        result = run(request, message["leg"], message["output"])
    except RepoosError as error:
        print(error, file=sys.stderr)
        return 2
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(leg_main(run_leg))
