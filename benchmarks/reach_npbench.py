"""Reach on NPBench: its NumPy kernels as their authors wrote them, on inputs from its own initializers.

NPBench (github.com/spcl/npbench) is the public suite the NumPy-programs issue was measured on. Its
code is not part of this project: give the path of a checkout. For each benchmark its `bench_info`
JSON names the NumPy implementation, the initializer and its arguments; the `S` preset's inputs are
made by NPBench's own `initialize`, the function is resolved with the shapes those inputs have (their
ranks, and the axes that are 1), and its native baseline is compared with the Python original on them
(`check`). Outputs beyond our tolerance are also judged by NPBench's own validation and counted apart: a
simulation that amplifies rounding over its time steps differs from itself as much when its sums are
reordered. A benchmark is *in scope* unless its inputs or its code hold complex numbers (out of the model by
design). Prints a table and writes it, with its commit, CPU and command, to
benchmarks/results/reach-npbench.md:

    git clone https://github.com/spcl/npbench /tmp/npbench
    .venv/bin/python benchmarks/reach_npbench.py /tmp/npbench
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from reach import RESULTS, _first_reason

from repoos_agent.check import check_baseline
from repoos_agent.errors import RepoosError
from repoos_agent.ingest import load_kernel
from repoos_agent.ingest.ranks import CallShapes
from repoos_agent.measure.provenance import provenance
from repoos_agent.target import ModuleFunction, Target


@dataclass(frozen=True)
class FixedInputs(Target):
    """A target whose inputs are NPBench's, made once by its initializer."""

    values: dict[str, object] = field(default_factory=dict)

    def inputs(self, size: str | None, seed: int = 0) -> dict[str, object]:
        return {name: value.copy() if isinstance(value, np.ndarray) else value for name, value in self.values.items()}


@dataclass(frozen=True)
class Outcome:
    name: str
    in_scope: bool
    modelled: bool
    correct: bool
    reason: str
    npbench_valid: bool = False  # beyond our tolerance, within NPBench's own validation (a chaotic simulation)


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"npbench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(root: Path, info: dict) -> dict[str, object]:
    """The `S` preset's inputs, as NPBench's own initializer makes them."""
    folder = root / "npbench" / "benchmarks" / info["relative_path"]
    initializer = getattr(_module(folder / f"{info['module_name']}.py"), info["init"]["func_name"])
    parameters = info["parameters"]["S"]
    made = initializer(*(parameters[name] for name in info["init"]["input_args"]))
    outputs = info["init"]["output_args"]
    made = made if isinstance(made, tuple) and len(outputs) > 1 else (made,)
    values = {**parameters, **dict(zip(outputs, made, strict=True))}
    return {name: values[name] for name in info["input_args"]}


def outcome_of(root: Path, info_path: Path) -> Outcome:
    info = json.loads(info_path.read_text())["benchmark"]
    name = info["short_name"]
    source = root / "npbench" / "benchmarks" / info["relative_path"] / f"{info['module_name']}_numpy.py"
    try:
        values = _inputs(root, info)
    except Exception as error:  # NPBench's own initializer failing is a finding about the harness, not the engine
        return Outcome(name, False, False, False, f"initializer raised {type(error).__name__}: {error}")
    complex_values = any(np.iscomplexobj(value) for value in values.values())
    in_scope = not complex_values and "complex" not in source.read_text() and "1j" not in source.read_text()
    try:
        kernel = load_kernel(source, info["func_name"], CallShapes.of_values(values))
    except RepoosError as error:
        return Outcome(name, in_scope, False, False, _first_reason(str(error)))
    target = FixedInputs(name, kernel, ModuleFunction(source, info["func_name"]), values=values)
    try:
        report = check_baseline(target, None)
    except RepoosError as error:
        return Outcome(name, in_scope, False, False, f"modelled, but not built: {str(error)[:100]}")
    if report.correct:
        return Outcome(name, in_scope, True, True, "")
    beyond = f"{', '.join(report.mismatched)} beyond our tolerance ({report.max_rel_error:.3g} > {report.tolerance:.3g})"
    if _within_npbench_tolerance(info, report.max_rel_error, [values.get(output) for output in report.mismatched]):
        return Outcome(name, in_scope, True, False, beyond + ", within NPBench's own", npbench_valid=True)
    return Outcome(name, in_scope, True, False, "wrong: " + beyond)


def _within_npbench_tolerance(info: dict, max_rel_error: float, outputs: list[object]) -> bool:
    """Whether NPBench's own validation (`allclose`, else a norm-wise relative error under the benchmark's
    `norm_error`) would accept outputs whose largest difference is `max_rel_error` of their largest magnitude.
    The norm-wise error of an array of n elements is at most sqrt(n) times that, so the bound is safe; an output
    the harness does not hold (a returned array) is never accepted this way."""
    if any(not isinstance(output, np.ndarray) for output in outputs):
        return False
    elements = max(output.size for output in outputs)
    return max_rel_error * np.sqrt(elements) < info.get("norm_error", 1e-5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("npbench", type=Path, help="a checkout of github.com/spcl/npbench")
    args = parser.parse_args(argv)
    infos = sorted((args.npbench / "bench_info").glob("*.json"))
    if not infos:
        print(f"{args.npbench}: no bench_info/*.json here; give the path of an NPBench checkout", file=sys.stderr)
        return 2
    os.environ.setdefault("REPOOS_CACHE_DIR", tempfile.mkdtemp(prefix="repoos-npbench-cache-"))
    rows = []
    for info_path in infos:
        row = outcome_of(args.npbench, info_path)
        scope, modelled = "in scope" if row.in_scope else "out", "modelled" if row.modelled else "refused"
        print(f"{row.name:28} {scope:9} {modelled:9} {row.reason[:80]}")
        rows.append(row)
    scoped = [row for row in rows if row.in_scope]
    modelled = sum(row.modelled for row in scoped)
    correct = sum(row.correct for row in scoped)
    loose = sum(row.npbench_valid for row in scoped)
    wrong = sum(row.modelled and not row.correct and not row.npbench_valid for row in scoped)
    lines = [
        "| benchmarks | in scope | modelled | correct | beyond our tolerance, within NPBench's | wrong |",
        "|---|---|---|---|---|---|",
        f"| {len(rows)} | {len(scoped)} | {modelled} ({modelled / len(scoped):.0%}) | {correct} | {loose} | {wrong} |",
        "",
        "| benchmark | in scope | modelled | correct | first refusal, or how outputs differ |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        flags = ("yes" if flag else "no" for flag in (row.in_scope, row.modelled, row.correct))
        lines.append(f"| {row.name} | {' | '.join(flags)} | {row.reason.replace('|', chr(92) + '|')} |")
    print("\n".join(lines))
    command = "python benchmarks/reach_npbench.py NPBENCH"
    path = RESULTS / "reach-npbench.md"
    path.write_text("# Reach on NPBench\n\n" + provenance(command).line() + "\n\n" + "\n".join(lines) + "\n")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
