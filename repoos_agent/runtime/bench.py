"""`repoos bench`: the same function, N calls as plain Python and N calls swapped, each leg in its own process.

Separate processes keep the legs from sharing a heap, a warm cache or a loaded
library, so peak memory and CPU belong to one leg each. Both legs make the same
inputs (same seed), time every call on a fresh copy of them, and save the outputs
of their first call; the parent compares those before reporting any gain.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from repoos_agent.errors import RepoosError
from repoos_agent.measure.compare import compare_outputs

LEGS = ("python", "swapped")


@dataclass(frozen=True)
class BenchRequest:
    """What both legs run: `function` of `script`, `calls` times, on inputs from `args` specs or a size class."""

    script: str
    function: str
    calls: int
    args: tuple[str, ...] = ()
    size: str | None = None
    seed: int = 0
    graph: str | None = None


@dataclass(frozen=True)
class LegResult:
    """One leg's figures: wall time per call, peak resident memory, CPU use while calling, and its route."""

    leg: str
    route: str  # what the calls ran on: "Python", "VerifiedKernel `…`", "baseline build (source order)"
    ms_per_call: float
    peak_mb: float
    cpu_percent: float
    calls: int


@dataclass(frozen=True)
class BenchReport:
    target: str
    size: str | None
    python: LegResult
    swapped: LegResult
    outputs: tuple[str, ...]
    matched: bool
    max_rel_error: float
    mismatched: tuple[str, ...]

    @property
    def gain(self) -> float:
        return self.python.ms_per_call / self.swapped.ms_per_call if self.swapped.ms_per_call > 0 else float("inf")

    @property
    def status(self) -> str:
        return "SUCCESS" if self.matched else "MISMATCH"


def run_bench(request: BenchRequest) -> BenchReport:
    """Run both legs (Python first) and compare their outputs."""
    if not Path(request.script).is_file():
        raise RepoosError(f"{request.script}: no such file")
    with tempfile.TemporaryDirectory(prefix="repoos-bench-") as directory:
        results, outputs = {}, {}
        for leg in LEGS:
            output = Path(directory) / f"{leg}.npz"
            results[leg] = _run_leg(request, leg, output)
            with np.load(output) as saved:
                outputs[leg] = {name: saved[name] for name in saved.files}
    names = sorted(set(outputs["python"]) & set(outputs["swapped"]))
    comparison = compare_outputs(outputs["python"], outputs["swapped"], names)
    return BenchReport(
        target=f"{request.script}:{request.function}",
        size=request.size,
        python=results["python"],
        swapped=results["swapped"],
        outputs=tuple(names),
        matched=comparison.correct,
        max_rel_error=comparison.max_rel_error,
        mismatched=comparison.mismatched,
    )


def _run_leg(request: BenchRequest, leg: str, output: Path) -> LegResult:
    payload = json.dumps({"request": asdict(request), "leg": leg, "output": str(output)})
    process = subprocess.run(
        [sys.executable, "-m", "repoos_agent.runtime.bench_leg", payload], capture_output=True, text=True, check=False
    )
    if process.returncode != 0:
        lines = process.stderr.strip().splitlines()
        raise RepoosError(f"the {leg} leg failed: {lines[-1] if lines else f'exit code {process.returncode}'}")
    return LegResult(**json.loads(process.stdout.strip().splitlines()[-1]))


def format_report(report: BenchReport) -> str:
    rows = [("", "time/call (ms)", "peak mem (MB)", "avg CPU (%)", "runs on")]
    for leg in (report.python, report.swapped):
        rows.append((leg.leg, f"{leg.ms_per_call:.4f}", f"{leg.peak_mb:.1f}", f"{leg.cpu_percent:.0f}", leg.route))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"{report.target}{f' at {report.size}' if report.size else ''}, {report.python.calls} calls per leg"]
    for row in rows:
        lines.append(
            "  "
            + "  ".join(
                cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(row[:4], widths, strict=True))
            )
            + f"  {row[4]}"
        )
    lines.append(f"  gain {report.gain:.1f}x")
    outputs = ", ".join(report.outputs) or "none"
    if report.matched:
        lines.append(f"  outputs ({outputs}) match, max relative error {report.max_rel_error:.1e}")
    else:
        lines.append(f"  outputs differ: {', '.join(report.mismatched)} (max relative error {report.max_rel_error:.1e})")
    lines.append(f"STATUS: {report.status}")
    return "\n".join(lines)


def report_json(report: BenchReport) -> dict:
    payload = asdict(report)
    payload.update(gain=report.gain, status=report.status)
    return payload
