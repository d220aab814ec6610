"""Index arrays and loops with bounds read from arrays: modelled, proven conservatively, checked before the run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from repoos_agent.backends import build_baseline, build_native
from repoos_agent.check import fresh_copy
from repoos_agent.codegen.loopnest import For, LoopNest, build_loop_nest
from repoos_agent.errors import ArgumentSpecError, KernelRuntimeError
from repoos_agent.ingest import NotAnalyzableError, ingest_source, load_kernel
from repoos_agent.legality import prove_legal
from repoos_agent.model import Signature
from repoos_agent.target import resolve_target
from repoos_agent.verify import verify_loop_nest

from .test_verify import rewrite


def test_a_csr_row_loop_is_one_statement_instance_per_row():
    kernel = resolve_target("sparse:spmv").kernel
    update = kernel.statement("S1")
    assert update.iterators == ("i",) and [loop.name for loop in update.inner] == ["k"]
    gathered = {access.array: access.free_dims for access in update.reads}
    assert gathered["x"] == {0} and gathered["val"] == {0} and gathered["rowptr"] == frozenset()
    assert set(kernel.index_arrays) == {"rowptr", "col"}


def test_rows_that_write_only_their_own_element_run_in_parallel():
    kernel = resolve_target("sparse:spmv").kernel
    verdict = prove_legal(kernel, "tile(i, 64); parallelize(i_t)")
    assert verdict.legal, verdict.feedback
    pull = resolve_target("graphs:pagerank").kernel
    assert prove_legal(pull, "parallelize(S3.i)").legal  # PageRank's pull loop, its row sum `s` private


@pytest.mark.parametrize(
    ("name", "schedule", "array"),
    [
        ("graphs:triangles", "parallelize(u)", "mark"),  # marks written through `col`, read by later rows
        ("graphs:bfs-levels", "parallelize(S1.v)", "level"),  # in-place relaxation reads other rows' levels
    ],
)
def test_what_depends_on_the_index_values_stays_sequential(name, schedule, array):
    verdict = prove_legal(resolve_target(name).kernel, schedule)
    assert verdict.verdict == "illegal"
    assert f"on `{array}`" in verdict.feedback


def test_a_parallel_scatter_updates_atomically_once_reassociation_is_allowed():
    target = resolve_target("sparse:histogram")
    kernel, values = target.kernel, target.inputs("SMALL")
    refused = prove_legal(kernel, "parallelize(S1.i)")
    assert refused.verdict == "reassociation" and "updates the scatter S1 (line 23) atomically" in refused.feedback
    verdict = prove_legal(kernel, "parallelize(S1.i)", allow_reassociation=True)
    assert verdict.legal and verdict.lowered.atomic == {"S1"}
    assert "S1's scatter into `counts` is updated atomically" in verdict.feedback
    nest = build_loop_nest(kernel, verdict.lowered)
    assert verify_loop_nest(kernel, verdict.lowered, nest, reassociates=True).verified
    signature = Signature.of_values(kernel, values)
    native = build_native(kernel, signature, verdict.lowered)
    assert "#pragma omp atomic update" in native.source.text
    got = fresh_copy(values)
    native(got)
    assert np.array_equal(got["counts"], np.bincount(values["bins"], minlength=values["n"]))


def test_a_privatized_scatter_sums_per_thread_copies_into_the_array():
    target = resolve_target("graphs:degrees")
    kernel, values = target.kernel, target.inputs("SMALL")
    verdict = prove_legal(kernel, "parallelize(S2.k); privatize(S2)", allow_reassociation=True)
    assert verdict.legal and "S2's scatter into `in_degree` accumulates in per-thread copies" in verdict.feedback
    nest = build_loop_nest(kernel, verdict.lowered)
    assert verify_loop_nest(kernel, verdict.lowered, nest, reassociates=True).verified
    native = build_native(kernel, Signature.of_values(kernel, values), verdict.lowered)
    assert "calloc" in native.source.text and "omp atomic" not in native.source.text
    got = fresh_copy(values)
    native(got)
    assert np.array_equal(got["in_degree"], np.bincount(values["col"], minlength=values["n"]))


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("privatize(S2)", "no parallel loop carries S2's sum; parallelize a loop around it"),
        ("parallelize(v); privatize(S0)", "S0 is not a sum into an array"),
    ],
)
def test_privatize_needs_a_parallel_scatter(schedule, fragment):
    verdict = prove_legal(resolve_target("graphs:degrees").kernel, schedule, allow_reassociation=True)
    assert verdict.verdict == "invalid" and fragment in verdict.feedback


def test_a_scatter_next_to_other_carried_dependences_stays_sequential():
    source = "def f(n, bins, counts, seen):\n    for i in range(n):\n        counts[bins[i]] += 1\n"
    source += "        seen[i] = counts[bins[i]]\n"
    (report,) = ingest_source(source, "f.py")
    assert prove_legal(report.kernel, "parallelize(i)", allow_reassociation=True).verdict == "illegal"


def test_a_reordered_scatter_is_a_reassociation_of_its_sums():
    kernel = resolve_target("sparse:histogram").kernel
    assert prove_legal(kernel, "reverse(S1.i)").verdict == "reassociation"
    assert prove_legal(kernel, "reverse(S1.i)", allow_reassociation=True).legal


def test_z3_reads_index_arrays_as_uninterpreted_functions():
    target = resolve_target("sparse:histogram")
    verdict = prove_legal(target.kernel, "")
    nest = build_loop_nest(target.kernel, verdict.lowered)
    assert verify_loop_nest(target.kernel, verdict.lowered, nest).verified
    scatter = lambda n: replace(n, parallel=True) if isinstance(n, For) and "S1" in str(n.body) else None  # noqa: E731
    raced = verify_loop_nest(target.kernel, verdict.lowered, LoopNest(rewrite(nest.root, scatter), nest.bounds))
    assert raced.verified is False and "race" in raced.reason  # two i with bins[i] equal collide


@pytest.fixture(scope="module")
def spmv():
    target = resolve_target("sparse:spmv")
    values = target.inputs("SMALL")
    return target.kernel, values, build_baseline(target.kernel, Signature.of_values(target.kernel, values))


@pytest.mark.parametrize(
    ("array", "position", "value", "expected"),
    [
        (
            "col",
            5,
            400,
            "`x[col[k]]` would index `x` past the end of dimension 0: index array `col` holds 400, and `x` has shape (400,)",
        ),
        ("col", 0, -1, "`x[col[k]]` would index `x` below 0: index array `col` holds -1"),
        ("rowptr", -1, 10**6, "`val[k]` would index `val` past the end of dimension 0: index array `rowptr` holds 1000000"),
    ],
)
def test_a_corrupted_csr_is_refused_before_the_run(spmv, array, position, value, expected):
    _, values, native = spmv
    bad = fresh_copy(values)
    bad[array][position] = value
    before = bad["y"].copy()
    with pytest.raises(KernelRuntimeError, match="refused the call") as error:
        native(bad)
    assert expected in str(error.value)
    assert np.array_equal(bad["y"], before)  # nothing written


def test_an_index_array_of_floats_is_a_clear_error(spmv):
    kernel, values, _ = spmv
    bad = {**values, "col": values["col"].astype(np.float64)}
    with pytest.raises(ArgumentSpecError, match=r"`col` is an index array .* must hold integers, got float64"):
        Signature.of_values(kernel, bad)


def test_a_gather_through_int32_indices_matches_python():
    source = "def gather(n, src, idx, out):\n    for i in range(n):\n        out[i] = 2.0 * src[idx[i]] + 1.0\n"
    (report,) = ingest_source(source, "gather.py")
    kernel = report.kernel
    rng = np.random.default_rng(3)
    values = {"n": 50, "src": rng.uniform(0.5, 1.5, 20), "idx": rng.integers(0, 20, 50).astype(np.int32), "out": np.zeros(50)}
    native = build_native(kernel, Signature.of_values(kernel, values), prove_legal(kernel, "parallelize(i)").lowered)
    got = fresh_copy(values)
    native(got)
    assert np.array_equal(got["out"], 2.0 * values["src"][values["idx"]] + 1.0)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            "    for k in range(p[i], p[i + 1]):\n        if k > 2:\n            y[i] += x[k]\n",
            "`if` inside loop `k`, whose bounds are read from arrays: write the condition as a conditional expression",
        ),
        (
            "    for k in range(p[i], p[i + 1]):\n        y[i] += x[k]\n        y[i] *= 2.0\n",
            "loop `k` reads its bounds from arrays, so its body runs inside one statement: it may hold one assignment",
        ),
        ("    for k in range(p[i], p[i + 1]):\n        y[i] += x[2 * k]\n", "an index of it must be `k` plus a constant"),
        ("    for k in range(p[i], i + 3):\n        y[i] += x[k]\n", "loop bound `i + 3` must be a size or an element"),
        ("    p[i] = 0\n    y[i] = x[p[i]]\n", "index array `p` is written by the function"),
    ],
)
def test_irregular_code_outside_the_model_is_refused_at_its_line(body, fragment, tmp_path):
    source = "def f(n, p, x, y):\n    for i in range(n):\n" + "".join("    " + line + "\n" for line in body.splitlines())
    (report,) = ingest_source(source, "f.py")
    assert not report.analyzable
    assert fragment in report.diagnostics[0].message
    path = tmp_path / "f.py"
    path.write_text(source)
    with pytest.raises(NotAnalyzableError, match=r"f.py:[34]:\d+"):
        load_kernel(path, "f")
