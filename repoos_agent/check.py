"""`check`: the baseline build against the Python original, on the same inputs.

The native code must compute what the Python function computes; this is the
first thing every later stage relies on, so it is measured, not assumed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from repoos_agent.backends import NativeKernel, build_native
from repoos_agent.catalog import SIZE_CLASSES
from repoos_agent.errors import RepoosError
from repoos_agent.measure import compare_outputs, time_runs
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.measure.original import warm_up
from repoos_agent.model.kernel import named_results
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target

PYTHON_INSTANCE_BUDGET = 3_000_000
"""Statement instances the Python original may run in one check (a few seconds):
above it, outputs are compared at the largest smaller size class."""


@dataclass(frozen=True)
class CheckReport:
    """The outcome of one `repoos check`: correctness, times, and what was compared where."""

    target: str
    size: str | None
    compare_size: str | None
    correct: bool
    max_rel_error: float
    tolerance: float
    outputs: tuple[str, ...]
    mismatched: tuple[str, ...]
    python_s: float
    native_s: float
    native_spread: float
    native_compare_s: float
    instances: int
    note: str

    @property
    def speedup(self) -> float:
        """Python over native, both at the size where outputs were compared."""
        return self.python_s / self.native_compare_s if self.native_compare_s > 0 else float("inf")


def written_arrays(target: Target) -> list[str]:
    """What a call's outcome is compared on: written arguments, then the returned arrays."""
    return list(target.kernel.outputs)


def run_python(target: Target, values: dict[str, object]) -> float:
    """Run the original once, in place and warm (a Numba function is compiled by an untimed call first); what it
    returns joins `values` under the native results' names.

    A failure in the user's code is reported, not raised raw."""
    kernel = target.kernel
    function = target.python_function()
    arguments = {name: values[name] for name in kernel.arguments}
    try:
        warm_up(function, arguments)
        start = time.perf_counter()
        result = function(**arguments)
        elapsed = time.perf_counter() - start
    except Exception as exc:  # the user's own code failing is a finding, not an engine crash
        raise RepoosError(f"the Python original `{target.label}` raised {type(exc).__name__}: {exc}") from None
    try:
        values.update(named_results(kernel.returns, kernel.returns_tuple, result))
    except ValueError as error:
        raise RepoosError(f"the Python original `{target.label}` {error}") from None
    return elapsed


def check_baseline(target: Target, size: str | None = None, seed: int = 0, compiler: str = "c") -> CheckReport:
    """Build the baseline (with the `compiler` backend), compare it with the Python original, and time both."""
    size = target.size_class(size)
    values = target.inputs(size, seed)
    native = built_baseline(target, values, compiler)
    instances = native.instances(values)
    compare_size, note = _compare_size(target, native, size, instances)
    compare_values = values if compare_size == size else target.inputs(compare_size, seed)
    compare_native = (
        native
        if compare_size == size
        else build_native(target.kernel, Signature.of_values(target.kernel, compare_values), backend=compiler)
    )

    want = fresh_copy(compare_values)
    python_s = run_python(target, want)
    got = fresh_copy(compare_values)
    compare_native(got)
    outputs = written_arrays(target)
    comparison = compare_outputs(want, got, outputs)

    timing = time_runs(native, lambda: fresh_copy(values))
    compare_timing = timing if compare_size == size else time_runs(compare_native, lambda: fresh_copy(compare_values))
    return CheckReport(
        target=target.label,
        size=size,
        compare_size=compare_size,
        correct=comparison.correct,
        max_rel_error=comparison.max_rel_error,
        tolerance=comparison.tolerance,
        outputs=tuple(outputs),
        mismatched=comparison.mismatched,
        python_s=python_s,
        native_s=timing.median_s,
        native_spread=timing.spread,
        native_compare_s=compare_timing.median_s,
        instances=instances,
        note=note,
    )


def built_baseline(target: Target, values: dict[str, object], compiler: str = "c") -> NativeKernel:
    """The baseline built (with the `compiler` backend) for the types of `values`: what `check` runs, and all that
    `check --no-measure` does."""
    return build_native(target.kernel, Signature.of_values(target.kernel, values), backend=compiler)


def _compare_size(target: Target, native: NativeKernel, size: str | None, instances: int) -> tuple[str | None, str]:
    if target.bundled is None or instances <= PYTHON_INSTANCE_BUDGET:
        return size, ""
    for candidate in reversed(SIZE_CLASSES[: SIZE_CLASSES.index(size)]):
        if native.instances(target.inputs(candidate)) <= PYTHON_INSTANCE_BUDGET:
            return candidate, (
                f"the Python original would run {instances:,} statement instances at {size}; "
                f"outputs compared at {candidate}, native code timed at both"
            )
    return "MINI", f"outputs compared at MINI ({instances:,} statement instances at {size})"
