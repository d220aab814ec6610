"""Soundness: every schedule the engine calls legal computes the baseline's output.

Hypothesis draws random schedules (random primitives, loops, factors) over kernels
of different shapes at MINI size (`blas(S)` among them, so products run by OpenBLAS are
compared too). Most random schedules are invalid or illegal;
each kernel must still see legal ones, and every one of those is compiled, run
on PolyBench's inputs and compared with the baseline build.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.agent.machine import Machine
from repoos_agent.backends import build_baseline, build_native
from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import fresh_copy, written_arrays
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target

from .conftest import EXAMPLES

KERNELS = [kernel.name for kernel in bundled_kernels()] + [f"{EXAMPLES / 'user_kernels.py'}:back_substitution"]
EXAMPLES_PER_KERNEL = int(os.environ.get("REPOOS_SOUNDNESS_EXAMPLES", "12"))  # 31 kernels x 12 = 372 schedules
HUNT = "REPOOS_SOUNDNESS_EXAMPLES" in os.environ  # a longer, randomised bug hunt instead of CI's fixed draw
MIN_LEGAL_PER_KERNEL = 2
AVX512 = Machine(cores=2, l1_bytes=32 * 1024, l2_bytes=1024 * 1024, l3_bytes=32 * 1024 * 1024, simd_doubles=8)
"""The heuristic's register tiles depend on the machine: anchors from a fixed one are the same on every CI host."""


def schedules(kernel) -> st.SearchStrategy[str]:
    """Random schedule text: primitives over loops of one statement's nest (qualified, as an agent would
    write them), plus plain names and names tiling adds, so that some of them apply and some do not."""
    nests = {s.name: [f"{s.name}.{loop.name}" for loop in s.loops] for s in kernel.statements if s.loops}
    everything = sorted({name for nest in nests.values() for name in nest})
    plain = sorted({loop.name for s in kernel.statements for loop in s.loops})
    any_loop = st.sampled_from(everything + plain + [f"{name}_t" for name in everything])
    names = [s.name for s in kernel.statements]
    pairs = st.sampled_from([(x, y) for x in names for y in names if x < y]) if len(names) > 1 else None
    any_loop_name = "t"
    size = st.sampled_from([2, 3, 4, 5, 8, 16, 32])
    products = [s.name for s in kernel.statements if s.op == "+="]  # `blas` of an update; non-products are invalid
    update = st.sampled_from(products or names)

    @st.composite
    def primitive(draw) -> str:
        nest = nests[draw(st.sampled_from(sorted(nests)))]
        start = draw(st.integers(0, len(nest) - 1))
        a = nest[start]
        b = nest[start + 1] if start + 1 < len(nest) else nest[start - 1] if start > 0 else any_loop_name
        c = nest[start + 2] if start + 2 < len(nest) else any_loop_name
        first, second = draw(pairs) if pairs is not None else (a, a)
        split = f"distribute({first}, {second}); " if pairs is not None else ""  # one statement: nothing to split off
        loop = draw(st.one_of(st.just(a), any_loop))
        return draw(
            st.sampled_from(
                [
                    f"interchange({a}, {b})",
                    f"tile({a}, {draw(size)})",
                    f"tile({a}, {b}, {draw(size)}, {draw(size)})",
                    f"tile({a}, {b}, {c}, {draw(size)}, {draw(size)}, {draw(size)})",
                    f"skew({a}, {b}, {draw(st.sampled_from([-1, 1, 2]))})",
                    f"reverse({loop})",
                    f"shift({loop}, {draw(st.sampled_from([-2, -1, 1, 2]))})",
                    f"fuse({first}, {second}, {draw(st.sampled_from([1, 2]))})",
                    f"distribute({first}, {second})",
                    f"parallelize({loop})",
                    f"vectorize({nest[-1]}, {draw(st.sampled_from([2, 4, 8]))})",
                    f"unroll({loop}, {draw(st.sampled_from([2, 3, 4]))})",
                    f"promote({loop})",
                    f"blas({draw(update)})",
                    f"parallelize({loop}); privatize({draw(update)})",
                    # a register tile: the middle loop's body becomes a box of constant extents, kept in locals
                    f"{split}tile({a}, {b}, {c}, {draw(size)}, {draw(size)}, {draw(size)}); "
                    f"interchange({a}_t, {b}_t); interchange({a}, {b}); promote({b})",
                ]
            )
        )

    return st.lists(primitive(), min_size=1, max_size=4).map("; ".join)


MLIR_KERNELS = ["gemm", "jacobi-2d", "seidel-2d", "covariance", "2mm", "symm"]
MLIR_EXAMPLES_PER_KERNEL = 20
SLOW_MLIR = ("covariance", "2mm")
"""Their MLIR draws take 10–14 s (large modules to lower for each schedule): in the slow set and the hunt; gemm's
draw keeps products in the default one."""
NUMPY_KERNELS = [
    "numpy:gemm", "numpy:softmax", "numpy:jacobi-2d", "numpy:lu", "numpy:syrk",
    "numpy:clip-outliers", "numpy:histogram-mask", "numpy:safe-ratio",
]  # fmt: skip
"""NumPy programs lowered by the array front-end: a product, reductions over rows, a stencil in a time
loop, a triangular solve by rows, float32, a loop-variant temporary; and as people write them: masked
assignments (statements guarded by data), masked counts, a select of loads (whose draw found a gcc
miscompile) (`REPOOS_SOUNDNESS_EXAMPLES` hunts all 66, and `-m slow` runs the rest at this draw)."""
NUMPY_EXAMPLES_PER_KERNEL = 10
IRREGULAR_SUITES = ("sparse", "graphs")
"""CSR kernels: subscripts read from index arrays (gathers, scatters with `+=`) and loops with bounds read from
row pointers, run on random power-law graphs with self-loops, repeated edges and dangling nodes."""
SLOW_KERNELS = ("adi", "3mm", "correlation", "covariance", "deriche")
"""The slowest draws (10–27 s each: large C files to build for every schedule) run in the slow set and the hunt;
the other 25 PolyBench kernels draw their 12 schedules by default."""


@pytest.mark.parametrize(
    ("name", "backend", "examples"),
    [
        pytest.param(name, "c", EXAMPLES_PER_KERNEL, marks=() if HUNT or name not in SLOW_KERNELS else pytest.mark.slow)
        for name in KERNELS
    ]
    + [
        pytest.param(name, "mlir", MLIR_EXAMPLES_PER_KERNEL, marks=() if HUNT or name not in SLOW_MLIR else pytest.mark.slow)
        for name in MLIR_KERNELS
    ]
    + [
        pytest.param(
            name,
            "c",
            EXAMPLES_PER_KERNEL if HUNT else NUMPY_EXAMPLES_PER_KERNEL,
            marks=() if HUNT or name in NUMPY_KERNELS else pytest.mark.slow,
        )
        for name in (k.name for k in bundled_kernels("numpy"))
    ]
    + [(k.name, "c", EXAMPLES_PER_KERNEL) for suite in IRREGULAR_SUITES for k in bundled_kernels(suite)],
)
def test_every_legal_random_schedule_computes_the_baseline_output(name, backend, examples):
    target = resolve_target(name)
    kernel = target.kernel
    values = target.inputs("MINI") if target.bundled else _user_inputs()
    signature = Signature.of_values(kernel, values)
    expected = fresh_copy(values)
    build_baseline(kernel, signature)(expected)
    outputs = written_arrays(target)
    verdicts: Counter[str] = Counter()

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=not HUNT,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(schedules(kernel), st.booleans())
    def legal_means_same_output(text: str, allow_reassociation: bool) -> None:
        verdict = prove_legal(kernel, text, allow_reassociation, explain=False)
        verdicts[verdict.verdict] += 1
        if not verdict.legal:
            return
        got = fresh_copy(values)
        build_native(kernel, signature, verdict.lowered, backend=backend)(got)
        scale = REASSOCIATION_TOLERANCE_SCALE if verdict.reassociates else 1.0
        comparison = compare_outputs(expected, got, outputs, scale)
        assert comparison.correct, f"legal schedule `{verdict.schedule}` changed {comparison.errors}"

    legal_means_same_output()
    # Random schedules of a many-statement kernel are mostly invalid; these anchors (every loop
    # analyze calls parallel, run in parallel; the innermost loop of the deepest statement unrolled by 3) are legal by
    # construction, so every kernel has legal schedules built and compared, whatever the draw.
    anchors = [f"parallelize({loop.name})" for loop in analyze(kernel).loops if loop.parallelizable]
    deepest = max(kernel.statements, key=lambda statement: len(statement.loops))
    anchors.append(f"unroll({deepest.name}.{deepest.iterators[-1]}, 3)")
    # Register tiles (`promote`), as the heuristic fits them to MINI's sizes and with its fixed blocks: ragged
    # edges and full blocks both run.
    proposer = HeuristicProposer(kernel, machine=AVX512, extents=kernel.parameter_values(values))
    register_tiles = [idea.schedule for idea in proposer.register_tilings()]
    assert register_tiles or name not in ("gemm", "2mm"), "the heuristic proposes no register tiles for a matrix product"
    anchors += register_tiles
    # Products run by OpenBLAS, as the heuristic proposes them (alone, together, with the other nests parallel).
    blas_calls = [idea.schedule for idea in proposer.blas_calls()]
    assert blas_calls or name not in ("numpy:gemm", "numpy:attention"), "the heuristic proposes no BLAS call for a product"
    anchors += blas_calls
    for text in anchors:
        verdict = prove_legal(kernel, text, explain=False)
        assert verdict.legal, (text, verdict.feedback)
        legal_means_same_output.hypothesis.inner_test(text, False)
    # Scatters and NumPy products' sums in parallel, atomic and in per-thread copies, as the heuristic proposes them.
    for loop in (loop for loop in analyze(kernel).loops if loop.array_sums):
        copies = "; ".join(f"privatize({name})" for name in loop.array_sums)
        for text in (f"parallelize({loop.name})", f"parallelize({loop.name}); {copies}"):
            assert prove_legal(kernel, text, True, explain=False).legal, text
            legal_means_same_output.hypothesis.inner_test(text, True)
    assert verdicts["legal"] + len(anchors) >= MIN_LEGAL_PER_KERNEL, dict(verdicts)


def _user_inputs():
    import numpy as np

    rng = np.random.default_rng(7)
    n = 23
    upper = np.triu(rng.uniform(0.5, 1.5, (n, n))) + np.eye(n) * n
    return {"U": upper, "y": rng.uniform(0.5, 1.5, n), "x": np.zeros(n)}
