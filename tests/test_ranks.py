"""Ranks without a call: what a function's source states about its arrays, what the inputs add, and the message
when neither says. `ingest` and `check` model a function with the same ranks, so they never disagree."""

from __future__ import annotations

import pytest

from repoos_agent.catalog import bundled_kernels
from repoos_agent.check import check_baseline
from repoos_agent.errors import ArgumentSpecError, NotAnalyzableError
from repoos_agent.ingest import ingest_file, ingest_source
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.ingest.ranks import SourceRanks, source_ranks
from repoos_agent.ingest.scop import function_arguments
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.target import Target, ingest_path, resolve_target

from .conftest import EXAMPLES, ROOT
from .fixtures import rank_programs

PROGRAMS = ROOT / "tests" / "fixtures" / "rank_programs.py"
NUMPY_PROGRAMS = ROOT / "tests" / "fixtures" / "numpy_programs.py"


def unknown_rank(array: str, example: str) -> str:
    return (
        f"the rank of array `{array}` is not known: give the inputs' shapes (`--arg {array}={example}`, "
        f"or `args` in MCP tools), or unpack its shape in the function (`n, m = {array}.shape`)"
    )


@pytest.fixture(scope="module")
def reports():
    """The fixture file ingested as `repoos ingest FILE` does, with no inputs."""
    return {report.name: report for report in ingest_file(PROGRAMS)}


def _ranks(report) -> dict[str, int]:
    arguments = report.kernel.arguments
    return {array.name: array.rank for array in report.kernel.arrays if array.name in arguments and array.rank > 0}


def _equals_python(report, *specs: str) -> None:
    """The model read without inputs, built and run on inputs of these specs, equals the Python original."""
    target = Target(report.name, report.kernel, getattr(rank_programs, report.name), None, tuple(map(parse_arg_spec, specs)))
    result = check_baseline(target, None)
    assert result.correct, (result.mismatched, result.max_rel_error)


def test_a_pythran_export_comment_gives_each_positional_parameter_its_rank(reports):
    report = reports["exported_scale"]
    assert report.analyzable, report.reason
    assert _ranks(report) == {"A": 2, "v": 1}
    _equals_python(report, "A=f64[7,5]", "v=f64[5]", "k=3")


def test_pythran_overloads_give_a_rank_only_where_they_agree():
    source = (
        "# pythran export f(float64[:,:], float64[:])\n"
        "# pythran export f(float32[][] order(C), float64[:,:])\n"
        "def f(A, v):\n"
        "    return A * 2.0 + v.sum()\n"
    )
    (report,) = ingest_source(source, "overloads.py")
    assert report.reason == unknown_rank("v", "f64[64]")
    (report,) = ingest_source(source, "overloads.py", given={"v": 1})
    assert report.analyzable and _ranks(report) == {"A": 2, "v": 1}


def test_annotations_that_spell_a_shape_give_ranks(reports):
    report = reports["annotated_outer"]
    assert report.analyzable, report.reason
    assert _ranks(report) == {"x": 1, "y": 1}
    _equals_python(report, "x=f64[6]", "y=f32[4]")


def test_an_ndarray_annotation_without_a_shape_leaves_the_rank_to_the_inputs(reports):
    assert reports["typed_row_sums"].reason == unknown_rank("x", "f64[64,64]")


def test_elements_in_arithmetic_with_loop_indices_give_ranks_to_a_whole_array_statement_before_them(reports):
    report = reports["damped_update"]
    assert report.analyzable, report.reason
    assert _ranks(report) == {"A": 2, "B": 2}
    _equals_python(report, "A=f64[9,7]", "B=f64[9,7]")


def test_one_index_in_arithmetic_does_not_fix_a_rank(reports):
    """`A[i] = A[i] / A[i].sum()` normalizes the rows of a matrix: reading `A` as a vector would model another function."""
    assert reports["normalize_rows"].reason == unknown_rank("A", "f64[64]")


def test_ranks_the_source_needs_exactly_come_from_indices_and_bounds():
    """An index (`x[col[k]]`) and a `range` bound are numbers in Python: their subscripts' counts are ranks.
    The values multiplied (`val[k]`, `x[...]`, `y[i]`) might be rows, so they stay unknown here."""
    tree = parse_source(read_source(PROGRAMS), str(PROGRAMS))
    csr = next(f for f in functions(tree) if text(f.child_by_field_name("name")) == "csr_product")
    stated = source_ranks(csr, read_source(PROGRAMS))
    assert stated.exact == {"rowptr": 1, "col": 1}
    assert set(stated.least) == {"rowptr", "col", "val", "x", "y"}


def test_a_truth_value_is_a_number_and_what_or_returns_need_not_be():
    source = (
        "def f(A, B, C, D, y):\n"
        "    for i in range(9):\n"
        "        for j in range(9):\n"
        "            y[i] = A[i] or B[i]\n"
        "            if C[i, j] > 0 and D[j] < 1:\n"
        "                y[i] = 0.0\n"
    )
    (function,) = functions(parse_source(source, "truth.py"))
    assert source_ranks(function, source).exact == {"A": 1, "C": 2, "D": 1}


def test_an_axis_bounds_the_rank_of_the_array_it_reduces_not_of_one_it_expands():
    source = (
        "def f(x, y, z, w):\n"
        "    a = np.linalg.norm(x, axis=1)\n"
        "    b = np.expand_dims(y, axis=1)\n"
        "    c = z.mean(axis=-3)\n"
        "    d = np.sum(w, axis=(0, 2))\n"
    )
    (function,) = functions(parse_source(source, "axes.py"))
    assert source_ranks(function, source) == SourceRanks({}, {"x": 2, "z": 3, "w": 3})


def test_slices_alone_do_not_fix_a_rank_and_the_inputs_do(reports):
    assert reports["blur"].reason == unknown_rank("out", "f64[64,64]")
    specs = [parse_arg_spec("x=f64[8,9]"), parse_arg_spec("out=f64[8,9]")]
    report = {r.name: r for r in ingest_path(PROGRAMS, specs)}["blur"]
    assert report.analyzable, report.reason
    _equals_python(report, "x=f64[8,9]", "out=f64[8,9]")


@pytest.mark.parametrize(
    ("function", "message"),
    [
        # was "`x2.T`: the transpose of an array of rank 0"
        ("pairwise_products", unknown_rank("x1", "f64[64]")),
        # was "axis 1 is out of range for an array of rank 0"
        ("standardize_rows", unknown_rank("x", "f64[64,64]")),
    ],
)
def test_the_first_reason_is_the_real_one(reports, function, message):
    assert reports[function].reason == message


@pytest.mark.parametrize(
    ("function", "specs"),
    [
        # was "index `n + 2` is not affine in the loop variables and sizes (index arrays are not modelled)"
        ("padded_grid", ["x=f64[280,280]"]),
        # was "`sx[0]`: an index array must be an argument of the function"
        ("kept_shape", ["x=f64[12]", "y=f64[12]"]),
    ],
)
def test_a_constant_size_and_a_kept_shape_are_modelled(function, specs):
    report = {r.name: r for r in ingest_path(PROGRAMS, [parse_arg_spec(spec) for spec in specs])}[function]
    assert report.analyzable, report.reason
    _equals_python(report, *specs)


def test_numpy_pi_is_a_number_when_the_module_keeps_its_name(reports):
    """Was "`numpy.pi` (attribute) is not modelled in a statement"."""
    report = reports["phases"]
    assert report.analyzable, report.reason
    _equals_python(report, "x=f64[33]", "y=f64[33]")


def test_the_ranks_the_inputs_give_override_the_sources():
    """`standardize_rows` with a rank-2 `x` from the inputs, as `check --arg x=f64[5,6]` models it, equals NumPy."""
    specs = [parse_arg_spec("x=f64[5,6]")]
    report = {r.name: r for r in ingest_path(PROGRAMS, specs)}["standardize_rows"]
    assert report.analyzable, report.reason
    _equals_python(report, "x=f64[5,6]")


def test_inputs_for_a_name_no_function_takes_are_refused():
    with pytest.raises(ArgumentSpecError, match=r"no function has a parameter named `X`, which the inputs give a shape for"):
        ingest_path(PROGRAMS, [parse_arg_spec("X=f64[4,4]")])


def _bundled_specs(kernel) -> list[str]:
    """A bundled kernel's MINI inputs as `--arg` specs."""
    specs = []
    for name, value in kernel.inputs("MINI").items():
        if hasattr(value, "ndim"):
            kind = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32"}[value.dtype.name]
            specs.append(f"{name}={kind}[{','.join(map(str, value.shape))}]")
        else:
            specs.append(f"{name}={value}")
    return specs


def _cases() -> list[tuple[str, str, tuple[str, ...]]]:
    cases = [(str(kernel.path), kernel.function, tuple(_bundled_specs(kernel))) for kernel in bundled_kernels("numpy")]
    cases += [(str(kernel.path), kernel.function, ()) for kernel in bundled_kernels("numpy")]
    for path in (PROGRAMS, NUMPY_PROGRAMS, EXAMPLES / "numpy_layer.py", EXAMPLES / "user_kernels.py"):
        tree = parse_source(read_source(path), str(path))
        cases += [(str(path), text(f.child_by_field_name("name")), ()) for f in functions(tree)]
    cases.append((str(PROGRAMS), "blur", ("x=f64[8,8]", "out=f64[8,8]")))
    cases.append((str(NUMPY_PROGRAMS), "layer", ("x=f64[4,3]", "w=f64[3,2]", "b=f64[2]")))
    return cases


@pytest.mark.parametrize(("path", "function", "specs"), _cases(), ids=lambda value: str(value).rsplit("/", 1)[-1][:40])
def test_ingest_and_check_agree_on_what_is_modelled(path, function, specs):
    """`repoos ingest FILE --arg ...` and `repoos check FILE:FUNCTION --arg ...` read one model, or refuse both."""
    parsed = [parse_arg_spec(spec) for spec in specs]
    own = [spec for spec in parsed if spec.name in _parameters(path, function)]
    report = next(r for r in ingest_path(path, parsed) if r.name == function)
    try:
        resolve_target(f"{path}:{function}", own)
    except NotAnalyzableError as error:
        assert not report.analyzable and report.reason in str(error)
    else:
        assert report.analyzable, report.reason


def _parameters(path: str, function: str) -> set[str]:
    tree = parse_source(read_source(path), path)
    node = next(f for f in functions(tree) if text(f.child_by_field_name("name")) == function)
    return set(function_arguments(node)[0])
