"""Vectorized reductions: a row sum's lanes keep partial sums, proved, verified and compared on real inputs."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from repoos_agent.agent.heuristic import HeuristicProposer
from repoos_agent.backends import build_baseline, build_native
from repoos_agent.check import fresh_copy, written_arrays
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.loopnest import build_loop_nest
from repoos_agent.evaluate import REASSOCIATION_TOLERANCE_SCALE
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.measure import compare_outputs
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target
from repoos_agent.verify import verify_loop_nest

ROW_NORMS = "kernels/examples/user_kernels.py:row_norms"


def _row_norms():
    return resolve_target(ROW_NORMS, [parse_arg_spec(s) for s in ("A=f64[37,53]", "norms=f64[37]")])


def _same_output(target, verdict, size: str | None = None) -> None:
    values = target.inputs(size)
    signature = Signature.of_values(target.kernel, values)
    expected, got = fresh_copy(values), fresh_copy(values)
    build_baseline(target.kernel, signature)(expected)
    build_native(target.kernel, signature, verdict.lowered)(got)
    comparison = compare_outputs(expected, got, written_arrays(target), REASSOCIATION_TOLERANCE_SCALE)
    assert comparison.correct, comparison.errors


def test_a_numpy_matrix_vector_product_vectorizes_its_row_sums_without_asking_for_reassociation():
    target = resolve_target("numpy:bicg")
    verdict = prove_legal(target.kernel, "interchange(S1.i, S1.j); vectorize(S1.i, 8); vectorize(S3.j, 8)")
    # NumPy leaves the order of `A @ p`'s sums to BLAS: splitting them reorders nothing the source fixed.
    assert verdict.verdict == "legal" and verdict.reassociates
    assert "splits the sum S3 (line 24) into one partial sum per lane" in verdict.feedback
    source = generate_c(target.kernel, Signature.of_values(target.kernel, target.inputs("SMALL")), verdict.lowered).text
    assert "reduction(+:rp_lane0)" in source and "q[i] = q[i] + rp_lane0;" in source
    _same_output(target, verdict, "SMALL")


def test_a_sum_the_source_ordered_is_reassociation_until_allowed_then_correct():
    target = _row_norms()
    refused = prove_legal(target.kernel, "vectorize(j, 8)")
    assert refused.verdict == "reassociation" and not refused.legal
    assert "the vectorized loop `j` splits the sum S1 (line 40)" in refused.feedback
    assert "Allow reassociation" in refused.feedback
    allowed = prove_legal(target.kernel, "parallelize(i); vectorize(j, 8)", allow_reassociation=True)
    assert allowed.legal and allowed.lowered.lane_sums  # a scalar accumulator, private to each thread of `i`
    nest = build_loop_nest(target.kernel, allowed.lowered)
    assert verify_loop_nest(target.kernel, allowed.lowered, nest, allowed.reassociates).verified
    _same_output(target, allowed)


def test_analyze_shows_which_sums_a_vector_loop_would_split():
    loops = {loop.name: loop for loop in analyze(resolve_target("numpy:mvt").kernel).loops}
    assert loops["S1.j"].lane_sums == ("S1",) and not loops["S1.j"].vectorizable
    assert loops["S2.i"].vectorizable and not loops["S2.i"].lane_sums


def test_a_sum_whose_partial_value_is_read_in_the_loop_stays_refused(tmp_path):
    path = tmp_path / "running.py"
    path.write_text(
        "def running(n, m, A, q, seen):\n"
        "    for i in range(n):\n"
        "        for j in range(m):\n"
        "            q[i] += A[i, j]\n"
        "            seen[i, j] = q[i]\n"
    )
    specs = [parse_arg_spec(s) for s in ("n=20", "m=30", "A=f64[n,m]", "q=f64[n]", "seen=f64[n,m]")]
    kernel = resolve_target(f"{path}:running", specs).kernel
    verdict = prove_legal(kernel, "vectorize(j, 8)", allow_reassociation=True)
    assert verdict.verdict == "illegal" and "loop `j` cannot run vectorized" in verdict.feedback


def test_z3_refutes_a_split_sum_whose_element_moves_with_the_loop():
    """The verifier checks the split on the generated loops, not on legality's word for it: a (wrongly) split
    sum whose element changes from one iteration to the next is a refuted nest, never a built kernel."""
    kernel = resolve_target("gemm").kernel
    verdict = prove_legal(kernel, "vectorize(S1.j, 8)")
    assert verdict.legal and not verdict.lowered.lane_sums
    (loop_id,) = verdict.lowered.vector
    forged = replace(verdict.lowered, lane_sums={loop_id: frozenset({"S1"})})
    verification = verify_loop_nest(kernel, forged, build_loop_nest(kernel, forged), reassociates=True)
    assert not verification.verified and "its element moves with it" in verification.reason


@pytest.mark.parametrize("name", ["numpy:bicg", "numpy:atax", "numpy:mvt"])
def test_the_heuristic_proposes_split_row_sums_for_matrix_vector_kernels(name):
    target = resolve_target(name)
    proposer = HeuristicProposer(target.kernel)
    split = [idea for idea in proposer.ideas if "row sums split across lanes" in idea.reason]
    assert split, [idea.schedule for idea in proposer.ideas]
    for idea in split:
        verdict = prove_legal(target.kernel, idea.schedule)
        assert verdict.legal and verdict.lowered.lane_sums
        _same_output(target, verdict, "MINI")


def test_a_triangular_row_sum_compiles_to_vector_adds():
    """gcc 12 leaves an `omp simd` reduction scalar when its loop may run no iteration (trisolv's `j < i`);
    the generated code runs it only when it runs, and then gcc packs the lanes.

    How wide the packed adds are is the host's choice: `-march=native` on a Zen 1 prefers 128-bit
    vectors, so an `addpd` on xmm is as packed as one on ymm; only a scalar `addsd` would be a failure."""
    target = resolve_target("numpy:trisolv")
    verdict = prove_legal(target.kernel, "vectorize(S0.i, 8); vectorize(j, 8)")
    assert verdict.legal
    values = target.inputs("SMALL")
    kernel = build_native(target.kernel, Signature.of_values(target.kernel, values), verdict.lowered)
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(kernel.library)], capture_output=True, text=True, check=True
    ).stdout
    body = disassembly.split("<repoos_kernel>:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"\bv?addpd\s+\S*%[xyz]mm", body), "the row sums were not packed into vector adds"
    _same_output(target, verdict, "SMALL")


SOFTMAX_ROWS = "fuse(S0,S1,1); fuse(S1,S2,1); fuse(S2,S3,1); fuse(S3,S4,1); fuse(S4,S5,1)"


def test_a_row_maximum_vectorizes_exactly_its_lanes_keeping_their_own_maxima():
    """softmax's `np.max(x, axis=1)`: a vector loop whose only carried dependence is the running maximum.
    Max rounds nothing, so the split needs no reassociation, and gcc packs the comparisons."""
    target = resolve_target("numpy:softmax")
    verdict = prove_legal(target.kernel, f"{SOFTMAX_ROWS}; parallelize(i); vectorize(S1.j, 8)")
    assert verdict.legal, verdict.feedback
    assert "splits the running maximum S1 (line 24) into one maximum per lane" in verdict.feedback
    nest = build_loop_nest(target.kernel, verdict.lowered)
    assert verify_loop_nest(target.kernel, verdict.lowered, nest, verdict.reassociates).verified
    values = target.inputs("SMALL")
    signature = Signature.of_values(target.kernel, values)
    assert "reduction(rp_npmax:rp_lane0)" in generate_c(target.kernel, signature, verdict.lowered).text
    kernel = build_native(target.kernel, signature, verdict.lowered)
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(kernel.library)], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"v(max|cmp\w*)ps\s+.*%[xyz]mm", disassembly), "the row maxima were not packed"
    _same_output(target, verdict, "SMALL")


EXTREMA = """\
import numpy as np


def extrema(n, m, A, high, low, mixed, python):
    for i in range(n):
        for j in range(m):
            high[i] = np.maximum(high[i], A[i, j])
            low[i] = np.minimum(A[i, j] * 2.0, low[i])
            mixed[i] = np.maximum(mixed[i], 0.5 * mixed[i] + A[i, j])
            python[i] = max(python[i], A[i, j])
"""


def _extrema(tmp_path):
    path = tmp_path / "extrema.py"
    path.write_text(EXTREMA)
    specs = ("n=23", "m=41", "A=f64[n,m]", "high=f64[n]", "low=f64[n]", "mixed=f64[n]", "python=f64[n]")
    return resolve_target(f"{path}:extrema", [parse_arg_spec(s) for s in specs])


def test_running_maxima_and_minima_in_either_argument_order_split_across_lanes_and_match(tmp_path):
    target = _extrema(tmp_path)
    verdict = prove_legal(target.kernel, "distribute(S0, S1); distribute(S1, S2); vectorize(S0.j, 4); vectorize(S1.j, 4)")
    assert verdict.legal, verdict.feedback
    assert {name for sums in verdict.lowered.lane_sums.values() for name in sums} == {"S0", "S1"}
    assert "running minimum S1" in verdict.feedback
    nest = build_loop_nest(target.kernel, verdict.lowered)
    assert verify_loop_nest(target.kernel, verdict.lowered, nest, verdict.reassociates).verified
    _same_output(target, verdict)


@pytest.mark.parametrize(
    "statement",
    [
        "S2",  # `m = np.maximum(m, 0.5 * m + a)` reads the running value itself: each lane would see another one
        "S3",  # Python's `max` drops a NaN that comes second and keeps one that comes first: order decides
    ],
)
def test_a_maximum_whose_order_matters_is_not_split(tmp_path, statement):
    target = _extrema(tmp_path)
    number = int(statement[1:])
    verdict = prove_legal(target.kernel, f"distribute(S{number - 1}, {statement}); vectorize({statement}.j, 4)")
    assert verdict.verdict == "illegal" and "cannot run vectorized" in verdict.feedback


@pytest.mark.parametrize("compiler", ["c", "mlir"])
def test_a_row_maximum_split_across_lanes_is_nan_wherever_numpy_says(tmp_path, compiler):
    """NumPy's row maximum is NaN where the row holds one, wherever it falls. The lanes combine with the
    prelude's NaN-propagating reduction, not OpenMP's `max`, whose NaN is unspecified."""
    path = tmp_path / "rows.py"
    path.write_text("import numpy as np\n\n\ndef row_max(x):\n    return np.max(x, axis=1)\n")
    target = resolve_target(f"{path}:row_max", [parse_arg_spec("x=f32[n,m]")])
    verdict = prove_legal(target.kernel, "vectorize(S1.j, 8)")
    assert verdict.legal and verdict.lowered.lane_sums, verdict.feedback
    x = np.random.default_rng(8).standard_normal((12, 67)).astype(np.float32)
    for row, column in ((1, 0), (2, 66), (3, 31), (4, 8), (5, 64), (6, 3)):
        x[row, column] = np.nan
    x[7] = np.nan
    signature = Signature.of_values(target.kernel, {"x": x})
    if compiler == "c":
        assert "reduction(rp_npmax:rp_lane0)" in generate_c(target.kernel, signature, verdict.lowered).text
    kernel = build_native(target.kernel, signature, verdict.lowered, backend=compiler)
    values = {"x": x.copy()}
    kernel(values)
    (result,) = target.kernel.returns
    np.testing.assert_array_equal(values[result.name], np.max(x, axis=1))
