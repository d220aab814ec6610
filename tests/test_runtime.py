"""Swapped functions: the same results as the Python original, native when it is safe, Python with one warning when not."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import repoos_agent
from kernels.examples import user_kernels
from kernels.polybench import gemm as gemm_module
from repoos_agent.evaluate import evaluate_schedule
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.runtime import SwapFallbackWarning
from repoos_agent.runtime.swap import find_contract
from repoos_agent.store import Batch, SQLiteStore
from repoos_agent.store.recording import record_winner
from repoos_agent.target import resolve_target
from tests.conftest import EXAMPLES, ROOT

SOLVE_ARGS = ["L=f64[48,48]", "b=f64[48]", "x=f64[48]"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with VerifiedKernels for gemm (`tile(k, j, 8, 8)`, measured) and lower_triangular_solve (source order)."""
    path = tmp_path_factory.mktemp("runtime-graph") / "graph.sqlite"
    store = SQLiteStore(path)
    gemm = resolve_target("gemm")
    record_winner(store, gemm, evaluate_schedule(gemm, "tile(k, j, 8, 8)", "MINI"))
    solve = resolve_target(f"{EXAMPLES / 'user_kernels.py'}:lower_triangular_solve", [parse_arg_spec(a) for a in SOLVE_ARGS])
    record_winner(store, solve, None)
    store.close()
    return str(path)


def _gemm_inputs(ni: int, nj: int, nk: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    return {"ni": ni, "nj": nj, "nk": nk, "alpha": 1.5, "beta": 0.7,
            "C": rng.random((ni, nj)), "A": rng.random((ni, nk)), "B": rng.random((nk, nj))}  # fmt: skip


def _copy(values: dict) -> dict:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in values.items()}


@pytest.fixture
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SwapFallbackWarning)
        yield


def test_swapped_gemm_equals_the_original_in_place(graph: str, no_fallback):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    assert swapped.native and "tile(k, j, 8, 8)" in swapped.route
    for ni, nj, nk in ((37, 41, 29), (1, 5, 3), (64, 64, 64)):
        values = _gemm_inputs(ni, nj, nk)
        want, got = _copy(values), _copy(values)
        gemm_module.gemm(**want)
        caller_buffer = got["C"]
        assert swapped(**got) is None
        assert got["C"] is caller_buffer  # computed in the caller's buffer, not a copy
        np.testing.assert_array_equal(got["C"], want["C"])
    positional = _copy(values)
    swapped(*positional.values())
    np.testing.assert_array_equal(positional["C"], want["C"])


def test_swapped_user_kernel_equals_the_original(graph: str, no_fallback):
    swapped = repoos_agent.swap(user_kernels.lower_triangular_solve, graph=graph)
    assert swapped.native
    rng = np.random.default_rng(7)
    for n in (48, 9, 200):
        L = np.tril(rng.random((n, n))) + n * np.eye(n)
        b = rng.random(n)
        want, got = np.zeros(n), np.zeros(n)
        user_kernels.lower_triangular_solve(L, b, want)
        swapped(L, b, got)
        np.testing.assert_array_equal(got, want)


def _expect_fallback(swapped, values: dict, match: str) -> None:
    want, got = _copy(values), _copy(values)
    gemm_module.gemm(**want)
    with pytest.warns(SwapFallbackWarning, match=match) as caught:
        swapped(**got)
        swapped(**_copy(values))  # the same reason again: no second warning
    assert len(caught) == 1
    np.testing.assert_array_equal(got["C"], want["C"])


def test_float32_input_falls_back_when_the_contract_is_float64(graph: str):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    values = _gemm_inputs(8, 9, 10)
    values["A"] = values["A"].astype(np.float32)
    _expect_fallback(swapped, values, "argument `A` is float32; the native kernel takes float64")


def _strided_b(values: dict) -> dict:
    """B as every other column of a wider array: a strided view, no copy."""
    rows, columns = values["B"].shape
    return values | {"B": np.random.default_rng(3).random((rows, 2 * columns))[:, ::2]}


def _a_is_c(values: dict) -> dict:
    """A and C one buffer: the kernel writes C while reading A."""
    return values | {"A": values["C"]}


@pytest.mark.parametrize(
    ("layout", "sizes", "match"),
    [
        (_strided_b, (8, 9, 10), "argument `B` is not C-contiguous"),
        (_a_is_c, (6, 6, 6), "arguments `C` and `A` share memory"),
    ],
    ids=["non-contiguous view", "aliased arguments"],
)
def test_memory_the_native_kernel_cannot_take_falls_back(graph: str, layout, sizes, match):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    values = _gemm_inputs(*sizes)
    want, got = layout(_copy(values)), layout(_copy(values))
    gemm_module.gemm(**want)
    with pytest.warns(SwapFallbackWarning, match=match):
        swapped(**got)
    np.testing.assert_array_equal(got["C"], want["C"])


def test_a_shape_the_kernel_cannot_index_falls_back(graph: str):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    values = _gemm_inputs(8, 9, 10)
    values["B"] = values["B"][:5].copy()  # nk = 10 rows are read
    with pytest.warns(SwapFallbackWarning, match="the native kernel refused the call"), pytest.raises(IndexError):
        swapped(**values)  # the Python original raises, as it would unswapped


def test_an_integer_too_large_for_the_kernel_falls_back(graph: str):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    values = _gemm_inputs(4, 4, 4)
    values["ni"] = 2**64 + 4  # ctypes would pass 4; Python indexes past the arrays and raises
    with pytest.warns(SwapFallbackWarning, match="does not fit the native kernel's 64-bit integer"), pytest.raises(IndexError):
        swapped(**values)


def _load(path: Path, name: str):
    """`name` as the file reads now, compiled from its text: an edit of the same size within the same second leaves
    the bytecode cache's stamp as it was, and the loader would run the old code."""
    spec = importlib.util.spec_from_file_location(f"runtime_test_{abs(hash(path))}_{path.stat().st_mtime_ns}", path)
    module = importlib.util.module_from_spec(spec)
    exec(compile(path.read_bytes(), str(path), "exec"), module.__dict__)
    return getattr(module, name)


SCALE = "def scale(n, alpha, a, b):\n    for i in range(n):\n        b[i] = alpha * a[i] + 1.0\n"


def test_a_changed_source_falls_back(tmp_path: Path):
    path = tmp_path / "mykernel.py"
    path.write_text(SCALE)
    graph = str(tmp_path / "graph.sqlite")
    target = resolve_target(f"{path}:scale", [parse_arg_spec(a) for a in ("n=16", "alpha=2.0", "a=f64[16]", "b=f64[16]")])
    record_winner(SQLiteStore(graph), target, None)
    assert repoos_agent.swap(_load(path, "scale"), graph=graph).native
    path.write_text(SCALE.replace("+ 1.0", "+ 2.0"))
    with pytest.warns(SwapFallbackWarning, match="the source of `scale` changed since its VerifiedKernel was recorded"):
        swapped = repoos_agent.swap(_load(path, "scale"), graph=graph)
    a, b = np.ones(4), np.zeros(4)
    swapped(4, 2.0, a, b)
    np.testing.assert_array_equal(b, np.full(4, 4.0))


def test_a_missing_or_altered_library_falls_back(graph: str, tmp_path: Path):
    contract = find_contract(gemm_module.gemm, graph).contract
    with pytest.warns(SwapFallbackWarning, match=r"cannot be read"):
        assert not repoos_agent.swap(gemm_module.gemm, contract=replace(contract, library=str(tmp_path / "gone.so"))).native
    altered = tmp_path / "altered.so"
    shutil.copy(contract.library, altered)
    with altered.open("ab") as handle:
        handle.write(b"\0")
    with pytest.warns(SwapFallbackWarning, match="is not the one that was verified"):
        assert not repoos_agent.swap(gemm_module.gemm, contract=replace(contract, library=str(altered))).native


def test_accelerate_builds_the_baseline_without_a_contract(tmp_path: Path, no_fallback):
    path = tmp_path / "mykernel.py"
    path.write_text(
        "import repoos_agent\n\n\n@repoos_agent.accelerate(graph=" + repr(str(tmp_path / "none.sqlite")) + ")\n" + SCALE
    )
    scale = _load(path, "scale")
    assert scale.route == "not called yet"
    a, b = np.arange(5.0), np.zeros(5)
    scale(5, 3.0, a, b)
    assert scale.route == "baseline build (source order)"
    np.testing.assert_array_equal(b, 3.0 * np.arange(5.0) + 1.0)


def test_accelerate_uses_the_verified_kernel(graph: str, no_fallback):
    accelerated = repoos_agent.accelerate(graph=graph)(gemm_module.gemm)
    values = _gemm_inputs(12, 13, 14)
    want = _copy(values)
    gemm_module.gemm(**want)
    accelerated(**values)
    assert "tile(k, j, 8, 8)" in accelerated.route
    np.testing.assert_array_equal(values["C"], want["C"])


def test_concurrent_calls_from_threads(graph: str, no_fallback):
    swapped = repoos_agent.swap(gemm_module.gemm, graph=graph)
    values = _gemm_inputs(30, 31, 32)
    want = _copy(values)
    gemm_module.gemm(**want)
    results, errors = [], []

    def work() -> None:
        try:
            for _ in range(10):
                got = _copy(values)
                swapped(**got)
                results.append(np.array_equal(got["C"], want["C"]))
        except Exception as error:  # reported below: a thread's failure must fail the test
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 40 and all(results)


SCRIPT = """
import sys
import numpy as np
from kernels.polybench.gemm import gemm


def scale(n, alpha, a, b):
    for i in range(n):
        b[i] = alpha * a[i] + 1.0


if __name__ == "__main__":
    a, b = np.arange(6.0), np.zeros(6)
    scale(6, float(sys.argv[1]), a, b)
    print(type(scale).__name__, type(gemm).__name__, b.tolist(), sys.argv[1:])
"""


def test_repoos_run_swaps_functions_in_the_script_and_its_imports(repoos_command, graph: str, tmp_path: Path):
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    store = SQLiteStore(graph)
    target = resolve_target(f"{script}:scale", [parse_arg_spec(a) for a in ("n=8", "alpha=2.0", "a=f64[8]", "b=f64[8]")])
    record_winner(store, target, None)
    result = subprocess.run([*repoos_command, "run", str(script), "2.0", "--flag"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "REPOOS_GRAPH": graph})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("[")[0].split() == ["SwappedFunction", "SwappedFunction"]
    assert "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0] ['2.0', '--flag']" in result.stdout
    assert "runs as Python" not in result.stderr


def test_repoos_run_falls_back_when_the_function_changed_since_its_contract(repoos_command, tmp_path: Path):
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    graph = str(tmp_path / "graph.sqlite")
    target = resolve_target(f"{script}:scale", [parse_arg_spec(a) for a in ("n=8", "alpha=2.0", "a=f64[8]", "b=f64[8]")])
    record_winner(SQLiteStore(graph), target, None)
    script.write_text(SCRIPT.replace("alpha * a[i] + 1.0", "alpha * a[i] - 1.0"))  # the old kernel would add 1
    result = subprocess.run([*repoos_command, "run", str(script), "2.0"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "REPOOS_GRAPH": graph})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "[-1.0, 1.0, 3.0, 5.0, 7.0, 9.0]" in result.stdout
    assert "the source of `scale` changed since its VerifiedKernel was recorded" in result.stderr
    assert f"in the graph store {graph}" in result.stderr


def test_repoos_run_without_a_store_runs_the_program_unswapped(repoos_command, tmp_path: Path):
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    missing = tmp_path / "nowhere" / "graph.sqlite"
    result = subprocess.run([*repoos_command, "run", str(script), "2.0"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "REPOOS_GRAPH": str(missing)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]" in result.stdout and "nothing is swapped" in result.stderr
    assert not missing.parent.exists()  # reading contracts never creates a store


APP = """
import numpy as np
import repoos_agent


def scale(n, alpha, a, b):
    for i in range(n):
        b[i] = alpha * a[i] + 1.0


if __name__ == "__main__":
    fast = repoos_agent.swap(scale)
    a, b = np.arange(6.0), np.zeros(6)
    fast(6, 2.0, a, b)
    print(type(scale).__name__, fast.route, b.tolist())
"""


def test_a_program_started_from_another_directory_finds_its_project_store(repoos_command, tmp_path: Path):
    """`python app.py` and `repoos run app.py`, started outside the project: the store at the project's root is
    found from the function's file, as git finds its repository, and the VerifiedKernel runs."""
    project, elsewhere = tmp_path.resolve() / "project", tmp_path.resolve() / "elsewhere"
    script = project / "src" / "app.py"
    script.parent.mkdir(parents=True)
    elsewhere.mkdir()
    script.write_text(APP)
    target = resolve_target(f"{script}:scale", [parse_arg_spec(a) for a in ("n=8", "alpha=2.0", "a=f64[8]", "b=f64[8]")])
    record_winner(SQLiteStore(project / ".repoos" / "graph.sqlite"), target, None)
    env = {**os.environ, "REPOOS_GRAPH": "", "PYTHONPATH": str(ROOT)}
    for command, swapped_at_def in (
        ([sys.executable, str(script)], "function"),
        ([*repoos_command, "run", str(script)], "SwappedFunction"),
    ):
        result = subprocess.run(command, capture_output=True, text=True, cwd=elsewhere, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split()[:2] == [swapped_at_def, "VerifiedKernel"], result.stdout
        assert "[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]" in result.stdout and "runs as Python" not in result.stderr
    assert not (elsewhere / ".repoos").exists()


def test_the_fallback_warning_names_the_store_it_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Python runs instead, and the warning says which store was read (or where none was found); an explicit
    store, `graph=` or $REPOOS_GRAPH, is read even when the project has one."""
    project = tmp_path.resolve() / "project"
    project.mkdir()
    path = project / "mykernel.py"
    path.write_text(SCALE)
    monkeypatch.delenv("REPOOS_GRAPH")
    monkeypatch.chdir(project)
    with pytest.warns(SwapFallbackWarning, match=re.escape(f"no .repoos/graph.sqlite in {project} or a directory above")):
        assert not repoos_agent.swap(_load(path, "scale")).native
    store = project / ".repoos" / "graph.sqlite"
    SQLiteStore(store).close()
    with pytest.warns(SwapFallbackWarning, match=re.escape(f"the graph store {store} has no VerifiedKernel")):
        assert not repoos_agent.swap(_load(path, "scale")).native
    target = resolve_target(f"{path}:scale", [parse_arg_spec(a) for a in ("n=16", "alpha=2.0", "a=f64[16]", "b=f64[16]")])
    record_winner(SQLiteStore(store), target, None)
    assert repoos_agent.swap(_load(path, "scale")).native
    named = tmp_path / "named.sqlite"
    SQLiteStore(named).close()
    with pytest.warns(SwapFallbackWarning, match=re.escape(f"the graph store {named} has no VerifiedKernel")):
        assert not repoos_agent.swap(_load(path, "scale"), graph=str(named)).native
    monkeypatch.setenv("REPOOS_GRAPH", str(named))
    with pytest.warns(SwapFallbackWarning, match=re.escape(f"the graph store {named} has no VerifiedKernel")):
        assert not repoos_agent.swap(_load(path, "scale")).native


def test_repoos_bench_on_gemm_succeeds_with_a_gain(repoos_command, graph: str):
    result = subprocess.run(
        [*repoos_command, "bench", "kernels/polybench/gemm.py", "kernels.polybench.gemm.gemm", "3", "--size", "MINI",
         "--graph", graph],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("STATUS: SUCCESS")
    gain = float(re.search(r"gain (\d+(?:\.\d+)?)x", result.stdout).group(1))
    assert gain > 1
    assert "VerifiedKernel `tile(k, j, 8, 8)`" in result.stdout


@pytest.mark.slow  # end to end: the slow set runs it
def test_repoos_bench_reports_a_mismatch(repoos_command, tmp_path: Path):
    """A VerifiedKernel whose library computes something else (here: another function's) is caught by bench."""
    specs = [parse_arg_spec(a) for a in ("n=16", "alpha=2.0", "a=f64[16]", "b=f64[16]")]
    graph = str(tmp_path / "graph.sqlite")
    store = SQLiteStore(graph)
    honest, other = tmp_path / "honest.py", tmp_path / "other.py"
    honest.write_text(SCALE)
    other.write_text(SCALE.replace("+ 1.0", "+ 2.0"))
    contract = record_winner(store, resolve_target(f"{honest}:scale", specs), None)
    wrong = record_winner(store, resolve_target(f"{other}:scale", specs), None)
    store.write(Batch((replace(contract, library=wrong.library, library_sha256=wrong.library_sha256),)))
    args = ["--arg", "n=16", "--arg", "alpha=2.0", "--arg", "a=f64[16]", "--arg", "b=f64[16]", "--graph", graph]
    result = subprocess.run([*repoos_command, "bench", str(honest), "scale", "2", *args], capture_output=True, text=True)
    assert result.returncode == 1
    assert "outputs differ: b" in result.stdout and result.stdout.strip().endswith("STATUS: MISMATCH")


def test_a_decorated_function_gets_its_verified_kernel(tmp_path: Path, no_fallback):
    """`@accelerate` in the user's file: the contract is made from (and checked against) the undecorated source."""
    path = tmp_path / "decorated.py"
    graph = str(tmp_path / "graph.sqlite")
    path.write_text(f"import repoos_agent\n\n\n@repoos_agent.accelerate(graph={graph!r})\n" + SCALE)
    target = resolve_target(f"{path}:scale", [parse_arg_spec(a) for a in ("n=16", "alpha=2.0", "a=f64[16]", "b=f64[16]")])
    assert not isinstance(target.function, repoos_agent.runtime.Accelerated)  # the oracle stays Python
    record_winner(SQLiteStore(graph), target, None)
    scale = _load(path, "scale")
    a, b = np.arange(3.0), np.zeros(3)
    scale(3, 2.0, a, b)
    assert scale.route.startswith("VerifiedKernel")
    np.testing.assert_array_equal(b, [1.0, 3.0, 5.0])
