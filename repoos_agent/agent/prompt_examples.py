"""Few-shot examples for a model's first prompt: schedules the engine proved legal on bundled kernels.

A small model copies shapes better than it reads a language's definition, so a kernel is shown the
example whose nest looks most like its own (a time loop or not, then the depth). The examples are
schedules, never timings: a figure measured on another day and machine would be a claim the engine
did not make in this run. `tests/test_prompt_examples.py` re-proves each on its kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.model.kernel import Kernel


@dataclass(frozen=True)
class Example:
    kernel: str  # a bundled PolyBench kernel
    nest: str  # its statements and loops, in words
    schedule: str
    depth: int
    time_loop: bool


EXAMPLES = (
    Example(
        "gemm",
        "S0 C[i, j] *= beta (loops i, j); S1 C[i, j] += alpha * A[i, k] * B[k, j] (loops i, k, j)",
        "distribute(S0, S1); tile(S1.i, S1.k, S1.j, 6, 64, 32); interchange(S1.i_t, S1.k_t); interchange(S1.i, S1.k); "
        "parallelize(S1.i_t); promote(S1.k)",
        3,
        False,
    ),
    Example(
        "mvt",
        "S0 x1[i] += A[i, j] * y_1[j] (loops i, j); S1 x2[i] += A[j, i] * y_2[j] (loops i, j)",
        "interchange(S1.i, S1.j); tile(S1.i, 128); interchange(S1.j, S1.i_t); parallelize(S0.i); parallelize(i_t)",
        2,
        False,
    ),
    Example(
        "jacobi-2d",
        "in a time loop t: S0 B[i, j] = 0.2 * (A[i, j] + neighbours) (loops t, i, j); S1 A[i, j] = 0.2 * (B ...) (loops t, i, j)",
        "shift(S1.i, 1); fuse(S0, S1, 2); skew(S0.t, S0.i, 2); tile(S0.t, S0.i, 8, 16); skew(S0.t_t, S0.i_t, 1); "
        "interchange(S0.t_t, S0.i_t); parallelize(S0.t_t)",
        3,
        True,
    ),
)


def closest_example(kernel: Kernel) -> Example:
    """The example whose nest is most like `kernel`'s: a time loop first, then the nearest depth."""
    time_loop = any(loop.name == "t" for statement in kernel.statements for loop in statement.loops)
    return min(EXAMPLES, key=lambda e: (e.time_loop != time_loop, abs(e.depth - kernel.depth)))


def examples_for(kernel: Kernel) -> str:
    """The closest example as prompt text (the kernel itself is never its own example)."""
    example = closest_example(kernel)
    return f"  {example.kernel}: {example.nest}\n  schedule: {example.schedule}"
