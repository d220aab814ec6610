"""One leg of `repoos bench`, in its own process: make the inputs, call N times, report figures on stdout.

Run as `python -m repoos_agent.runtime.bench_leg JSON`; the parent reads the last stdout line.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np

from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import fresh_copy
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.runtime.bench import BenchRequest, LegResult
from repoos_agent.runtime.swap import Accelerated
from repoos_agent.target import ModuleFunction, resolve_target


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
    function = target.function.imported() if isinstance(target.function, ModuleFunction) else target.function
    route = "Python"
    if leg == "swapped":
        accelerated = Accelerated(function, request.graph)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            accelerated(**fresh_copy(values))  # untimed: resolves the contract or builds the baseline, loads the library
        route = accelerated.route
        if caught:
            route += f" — fell back: {caught[0].message}"
        function = accelerated
    first = fresh_copy(values)
    elapsed = 0.0
    cpu = 0.0
    for call in range(request.calls):
        arguments = first if call == 0 else fresh_copy(values)
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        function(**arguments)
        elapsed += time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    np.savez(output, **{name: value for name, value in first.items() if isinstance(value, np.ndarray)})
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return LegResult(leg, route, elapsed / request.calls * 1e3, peak_mb, 100 * cpu / elapsed if elapsed > 0 else 0.0, request.calls)


def main() -> int:
    message = json.loads(sys.argv[1])
    try:
        result = run_leg(
            BenchRequest(**{**message["request"], "args": tuple(message["request"]["args"])}), message["leg"], message["output"]
        )
    except RepoosError as error:
        print(error, file=sys.stderr)
        return 2
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
