"""The `repoos` command as a user runs it: JSON fields, exit codes, one-line errors."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import pytest

from repoos_agent.cli import build_parser, main
from repoos_agent.entry_point import LazyHandler

from .conftest import EXAMPLES, ROOT


def run(command: list[str], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300
    )


def test_check_bundled_kernel_reports_json_fields(repoos):
    result = repoos("check", "gemm", "--size", "MINI", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["target"] == "gemm" and report["size"] == "MINI"
    assert report["correct"] is True
    assert report["max_rel_error"] <= 1e-9
    assert report["python_s"] > 0 and report["native_s"] > 0
    assert report["python_s"] > report["native_s"]


@pytest.mark.slow  # end to end: the slow set runs it
def test_check_large_compares_on_a_smaller_size_and_says_so(repoos):
    result = repoos("check", "gemm", "--size", "LARGE", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["size"] == "LARGE" and report["compare_size"] in ("MINI", "SMALL", "MEDIUM")
    assert "outputs compared at" in report["note"]
    assert report["native_s"] > report["native_compare_s"]


def test_check_user_kernel_with_arg_specs(repoos):
    target = f"{EXAMPLES / 'user_kernels.py'}:row_norms"
    result = repoos("check", target, "--arg", "A=f64[64,48]", "--arg", "norms=f64[64]", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["correct"] is True


def test_check_leaves_an_argument_the_user_left_out_to_its_default(repoos):
    target = f"{ROOT / 'tests' / 'fixtures' / 'default_arguments.py'}:softened"
    result = repoos("check", target, "--arg", "x=f64[64]", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["correct"] is True


def test_check_records_a_file_whose_other_functions_read_sizes_of_arrays_of_unknown_rank(repoos, tmp_path):
    source = tmp_path / "app.py"
    source.write_text("def scaled(x):\n    n = x.shape[0]\n    return x * n\n\n\ndef doubled(x):\n    return x * 2.0\n")
    result = repoos("check", f"{source}:doubled", "--arg", "x=f64[100]", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["correct"] is True


def test_ingest_json_lists_functions_with_diagnostics(repoos):
    result = repoos("ingest", str(EXAMPLES / "not_affine.py"), "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    bucket = rows["bucket"]
    assert bucket["analyzable"] is False and bucket["track"] == "other"
    assert bucket["diagnostics"] == [
        {
            "line": 8,
            "column": 9,
            "message": "subscript `out[values[i] // 10]` is neither affine in the loop variables nor an index-array element",
        }
    ]
    assert rows["adults"]["track"] == "tabular"


def test_ingest_json_of_an_affine_kernel(repoos):
    result = repoos("ingest", "kernels/polybench/gemm.py", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["init"]["analyzable"] is False  # NumPy set-up code is reported, not modelled
    row = rows["gemm"]
    assert row["name"] == "gemm" and row["track"] == "affine" and row["analyzable"] is True
    assert row["statements"] == 2 and row["loops"] == ["i", "j", "k"]
    assert row["parameters"] == ["ni", "nj", "nk"] and row["diagnostics"] == []


@pytest.mark.slow  # end to end: the slow set runs it
def test_ingest_and_analyze_take_the_inputs_check_takes_and_model_with_their_ranks(repoos):
    """NumPy code leaves its ranks unsaid: `ingest` alone says the inputs' shapes are needed; with the `--arg`
    that `check` takes, `ingest` and `analyze` model the function as `check` does."""
    layer = str(EXAMPLES / "numpy_layer.py")
    alone = {row["name"]: row for row in json.loads(repoos("ingest", layer, "--json").stdout)}
    assert alone["layer"]["analyzable"] is False
    assert alone["layer"]["reason"].startswith("the rank of array `x` is not known: give the inputs' shapes (`--arg x=f64[64]`")
    specs = ["--arg", "x=f64[12,5]", "--arg", "w=f64[5,3]", "--arg", "b=f64[3]"]
    given = repoos("ingest", layer, *specs, "--json")
    assert given.returncode == 0, given.stderr
    row = {row["name"]: row for row in json.loads(given.stdout)}["layer"]
    assert row["analyzable"] is True and row["loops"], row["reason"]
    analysis = repoos("analyze", f"{layer}:layer", *specs, "--json")
    assert analysis.returncode == 0, analysis.stderr
    assert json.loads(analysis.stdout)["kernel"] == "layer"


def test_version_is_the_installed_package_version(repoos_command):
    result = run(repoos_command, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"repoos {importlib.metadata.version('repoos-agent')}\n"
    assert re.fullmatch(r"repoos \d+\.\d+\.\d+\S*\n", result.stdout)


def test_version_without_an_installed_package_is_one_line(monkeypatch, capsys):
    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "repoos: error: no version: the repoos-agent package is not installed\n"


ENGINE = (
    "numpy",
    "islpy",
    "z3",
    "tree_sitter",
    "repoos_agent.agent",
    "repoos_agent.codegen",
    "repoos_agent.backends",
    "repoos_agent.store",
)
"""What building the parser must not load: each costs `repoos --help` a part of the second the engine takes to import."""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["optimize", "--help"], ["check"]], ids=" ".join)
def test_the_grammar_loads_no_engine_stage(argv: list[str]):
    """`--version`, `--help` and a usage error build the whole parser and end there, in a process of their own."""
    program = (
        "import json, sys\n"
        "from repoos_agent.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert [name for name in loaded if any(name == stage or name.startswith(f"{stage}.") for stage in ENGINE)] == []


def test_every_command_names_a_handler_that_exists():
    """A handler is named by a string the parser holds: a misspelt one would fail only when its command runs."""
    (commands,) = (action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    handlers = {name: command.get_default("run") for name, command in commands.choices.items()}
    lazy = {name: handler for name, handler in handlers.items() if isinstance(handler, LazyHandler)}
    assert set(handlers) - set(lazy) == {"mcp"}  # its `serve` imports the server when it runs
    assert all(callable(handler.resolve()) for handler in lazy.values())


def test_kernels_lists_polybench_and_the_numpy_programs(repoos):
    result = repoos("kernels", "--json")
    names = {k["name"] for k in json.loads(result.stdout)}
    assert len(names) == 30 + 66 + 2 + 6 + 11
    assert {"jacobi-2d", "floyd-warshall", "2mm", "numpy:softmax", "numpy:attention", "sparse:spmv", "graphs:pagerank"} <= names
    assert {"fsm:crc32", "fsm:utf8-validate", "fsm:brainfuck"} <= names


def test_kernels_table_labels_every_size_class_and_parameter(repoos):
    result = repoos("kernels")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["kernel", "parameter", "MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE"]
    gemm = [line.split() for line in lines].index(["gemm", "ni", "20", "60", "200", "1000", "2000"])
    assert [line.split() for line in lines[gemm + 1 : gemm + 3]] == [
        ["nj", "25", "70", "220", "1100", "2300"],
        ["nk", "30", "80", "240", "1200", "2600"],
    ]
    assert lines[gemm - 1] == "linear-algebra/blas"
    assert ["3mm", "ni", "16", "40", "180", "800", "1600"] in [line.split() for line in lines]
    assert lines[-1].startswith("115 kernels")
    assert max(len(line) for line in lines) <= 80


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "gemmm"], "unknown kernel `gemmm`; did you mean gemm"),
        (["check", "missing.py:f", "--arg", "n=3"], "missing.py: no such file"),
        (["check", "kernels/examples/user_kernels.py:row_norms", "--arg", "A=f64[4,x"], "--arg `A=f64[4,x`"),
        (
            ["check", "kernels/examples/user_kernels.py:row_norms"],
            "needs inputs for: A, norms; give them as --arg A=f64[64,64] --arg norms=f64[64]",
        ),
        (
            ["check", "kernels/examples/user_kernels.py:lower_triangle_update", "--arg", "n=8"],
            "needs inputs for: alpha, x, C; give them as --arg alpha=1.5 --arg x=f64[64] --arg C=f64[64,64]",
        ),
        (["check", "gemm", "--arg", "n=8"], "--arg applies to `path.py:function` targets; bundled kernels take --size"),
        (["check", "kernels/examples/not_affine.py:bucket", "--arg", "n=3"], "not_affine.py:8:9"),
        (["ingest", "kernels/examples"], "is a directory"),
        (
            ["ingest", "kernels/examples/numpy_layer.py", "--arg", "X=f64[2]"],
            "no function has a parameter named `X`, which the inputs give a shape for",
        ),
        (["check", "gemm", "--size", "HUGE"], "unknown size `HUGE`"),
        (["show", "kernels/examples/user_kernels.py:row_norms"], "needs inputs for: A, norms; give them as --arg A=f64[64,64]"),
        (["show", "gemm", "--arg", "ni=3"], "--arg applies to `path.py:function` targets; bundled kernels take --size"),
        (
            ["show", "kernels/examples/user_kernels.py:row_norms", "--size", "MINI"],
            "--size applies to bundled kernels; give user kernels their sizes with --arg",
        ),
    ],
)
def test_bad_input_gives_one_line_and_nonzero_exit(args, message, monkeypatch, capsys):
    """In the test's process, as `main` maps every error the same way whatever called it; the installed command's own
    exit is checked once below."""
    monkeypatch.chdir(ROOT)
    assert main(args) != 0
    stderr = capsys.readouterr().err
    assert message in stderr
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_the_installed_command_exits_non_zero_with_one_line_on_bad_input(repoos_command):
    result = run(repoos_command, "check", "gemmm")
    assert result.returncode != 0
    assert "unknown kernel `gemmm`; did you mean gemm" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_syntax_error_in_file_is_reported_with_place(repoos, tmp_path):
    source = tmp_path / "broken.py"
    source.write_text("def f(A):\n    for i in range(3)\n        A[i] = 1\n")
    result = repoos("ingest", str(source))
    assert result.returncode != 0
    assert f"{source}:2:" in result.stderr and "syntax error" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_compiler_is_one_clear_error(repoos_command, tmp_path):
    result = run(repoos_command, "check", "gemm", "--size", "MINI", env={"CC": "no-such-cc", "REPOOS_CACHE_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "C compiler `no-such-cc` not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_compiler_failure_is_one_clear_error(repoos_command, tmp_path):
    result = run(repoos_command, "check", "gemm", "--size", "MINI", env={"CC": "false", "REPOOS_CACHE_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "false failed on" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_schedule_reports_verdict_and_measurement(repoos):
    result = repoos("check", "gemm", "parallelize(i)", "--size", "MINI", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "legal" and report["legal"] is True and report["correct"] is True
    assert report["speedup"] > 0 and report["baseline_s"] > 0 and report["candidate_s"] > 0
    assert report["spread"] >= 0 and "i" in report["parallel_loops"] and report["violations"] == []


def test_check_illegal_schedule_lists_violations_and_exits_nonzero(repoos):
    result = repoos("check", "gemm", "parallelize(k)", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["verdict"] == "illegal" and report["legal"] is False and report["speedup"] is None
    assert report["violations"][0]["array"] == "C" and report["violations"][0]["primitive"] == "parallelize(k)"
    assert "parallelize(i)" in report["feedback"]
    # The pair the parallel `k` would run at once: the same C[i, j], two different k.
    pair = re.fullmatch(
        r"with ni=\d+, nj=\d+, nk=\d+: S1\(i=(\d+), k=(\d+), j=(\d+)\) must run after S1\(i=(\d+), k=(\d+), j=(\d+)\), "
        r"but they are in different iterations of parallel loop `k`",
        report["violations"][0]["example"],
    )
    assert pair is not None, report["violations"][0]["example"]
    sink_i, sink_k, sink_j, source_i, source_k, source_j = (int(value) for value in pair.groups())
    assert (sink_i, sink_j) == (source_i, source_j) and sink_k > source_k
    assert report["violations"][0]["example"] in report["feedback"]


def test_check_garbage_schedule_is_an_invalid_verdict_without_traceback(repoos):
    result = repoos("check", "gemm", "}}{{ not a schedule", "--no-measure")
    assert result.returncode == 1 and "invalid" in result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize("target", ["gemm", "fsm:crc32"])
def test_check_without_a_schedule_and_no_measure_builds_the_baseline_and_runs_nothing(repoos, monkeypatch, target):
    from repoos_agent.commands import check
    from repoos_agent.fsm import track

    def no_run(*_args, **_kwargs):
        raise AssertionError("--no-measure ran or timed the baseline")

    monkeypatch.setattr(check, "check_baseline", no_run)
    monkeypatch.setattr(track, "outcome", no_run)
    result = repoos("check", target, "--size", "MINI", "--no-measure", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["measured"] is False and report["built"].endswith(".so")


def test_analyze_json_marks_parallel_loops(repoos):
    result = repoos("analyze", "jacobi-2d", "--json")
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    loops = {loop["name"]: loop for loop in analysis["loops"]}
    assert loops["t"]["parallelizable"] is False and loops["S0.i"]["parallelizable"] is True
    assert any("flow (read after write)" in d for d in analysis["dependences"])
