"""Random schedules as the soundness suite draws them, for tests of one front-end feature: every schedule
legality accepts is built and must compute the baseline's output on the given inputs."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hypothesis import HealthCheck, given, settings

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.legality.prove import prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.measure.layout import fresh_copy
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature

from .test_soundness import schedules


def legal_schedules_keep_the_output(
    kernel: Kernel, values: dict[str, object], examples: int, also: Iterable[str] = ()
) -> tuple[list[str], Callable[[str], None]]:
    """Draw `examples` schedules, then try each of `also`; returns the legal ones, and the check for more."""
    signature = Signature.of_values(kernel, values)
    expected = fresh_copy(values)
    build_baseline(kernel, signature)(expected)
    legal: list[str] = []

    def same_output(text: str) -> None:
        verdict = prove_legal(kernel, text, False, explain=False)
        if not verdict.legal:
            return
        legal.append(text)
        got = fresh_copy(values)
        build_native(kernel, signature, verdict.lowered)(got)
        comparison = compare_outputs(expected, got, list(kernel.outputs))
        assert comparison.correct, f"legal schedule `{verdict.schedule}` changed {comparison.errors}"

    drawn = settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    drawn(given(schedules(kernel))(same_output))()
    for text in also:
        same_output(text)
    return legal, same_output
