"""`repoos bench`: the same function, N calls as plain Python and N calls swapped, each leg in its own process.

Separate processes keep the legs from sharing a heap, a warm cache or a loaded
library, so peak memory and CPU belong to one leg each. Both legs make the same
inputs (same seed), time every call on a fresh copy of them, and save the outputs
of their first call; the parent compares those before reporting any gain.

A function another track claims is benched by that track's leg (`repoos_agent.tracks`): an
ORM endpoint's, the same calls on a database session, its first response compared exactly,
in order, as the client would receive it.
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
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.measure.compare import compare_outputs
from repoos_agent.tracks import Track, bench_track

LEGS = ("python", "swapped")


@dataclass(frozen=True)
class BenchRequest:
    """What both legs run: `function` of `script`, `calls` times, on inputs from `args` specs or a size class
    (an endpoint: its values from `args` NAME=VALUE, else its defaults, on a session on `db` or its own)."""

    script: str
    function: str
    calls: int
    args: tuple[str, ...] = ()
    size: str | None = None
    seed: int = 0
    graph: str | None = None
    db: str | None = None


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
    max_rel_error: float | None  # None: the outputs are compared exactly (an endpoint's response)
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
    tree = parse_source(read_source(request.script), request.script)
    if request.function not in {text(node.child_by_field_name("name")) for node in functions(tree)}:
        raise RepoosError(f"{request.script}: no top-level function named `{request.function}`")
    track = bench_track(request.script, request.function, request.graph)
    if not track.takes_database and request.db:
        raise RepoosError(f"--db: `{request.function}` of {request.script} is not an ORM endpoint (a query ending in `.all()`)")
    if track.takes_database and request.size:
        raise RepoosError(f"--size applies to bundled kernels; give `{request.function}` its values with --arg NAME=VALUE")
    with tempfile.TemporaryDirectory(prefix="repoos-bench-") as directory:
        saved = {leg: Path(directory) / f"{leg}.{track.bench_output}" for leg in LEGS}
        results = {leg: _run_leg(request, leg, saved[leg], track) for leg in LEGS}
        if track.bench_output == "json":
            responses = [json.loads(saved[leg].read_text()) for leg in LEGS]
            matched, names, error, mismatched = responses[0] == responses[1], ("response",), None, ("response",)
        else:
            python, swapped = (_saved_arrays(saved[leg]) for leg in LEGS)
            names = tuple(sorted(set(python) & set(swapped)))
            comparison = compare_outputs(python, swapped, list(names))
            matched, error, mismatched = comparison.correct, comparison.max_rel_error, comparison.mismatched
    return BenchReport(
        target=f"{request.script}:{request.function}",
        size=request.size,
        python=results["python"],
        swapped=results["swapped"],
        outputs=names,
        matched=matched,
        max_rel_error=error,
        mismatched=() if matched else mismatched,
    )


def _saved_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as saved:
        return {name: saved[name] for name in saved.files}


def _run_leg(request: BenchRequest, leg: str, output: Path, track: Track) -> LegResult:
    """One leg in its own process; the request goes on stdin, so a `--db` password is on no command line."""
    payload = json.dumps({"request": asdict(request), "leg": leg, "output": str(output)})
    process = subprocess.run(
        [sys.executable, "-m", str(track.bench_leg)], input=payload, capture_output=True, text=True, check=False
    )
    if process.returncode != 0:
        lines = process.stderr.strip().splitlines()
        last = lines[-1] if lines else f"exit code {process.returncode}"
        if request.db and track.hide_secrets is not None:
            last = track.hide_secrets(request.db, last)
        raise RepoosError(f"the {leg} leg failed: {last}")
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
    error = None if report.max_rel_error is None else f"max relative error {report.max_rel_error:.1e}"
    if report.matched:
        lines.append(f"  outputs ({outputs}) match{f', {error}' if error else ' exactly, in order'}")
    else:
        lines.append(f"  outputs differ: {', '.join(report.mismatched)}{f' ({error})' if error else ''}")
    lines.append(f"STATUS: {report.status}")
    return "\n".join(lines)


def report_json(report: BenchReport) -> dict:
    payload = asdict(report)
    payload.update(gain=report.gain, status=report.status)
    return payload
