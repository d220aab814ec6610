"""What every benchmark script shares: choosing kernels, a private build cache, writing the table."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from repoos_agent.catalog import BundledKernel, bundled_kernels

RESULTS = Path(__file__).parent / "results"


def chosen_kernels(names: str) -> list[BundledKernel]:
    """`all`, or a comma-separated list of PolyBench names; builds go to a fresh cache so they are real."""
    os.environ["REPOOS_CACHE_DIR"] = tempfile.mkdtemp(prefix="repoos-bench-cache-")
    return [k for k in bundled_kernels() if names == "all" or k.name in names.split(",")]


def write_results(file_name: str, title: str, lines: list[str], summary: str) -> None:
    """The table and its summary, with the machine and date, to benchmarks/results/FILE_NAME."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
    path = RESULTS / file_name
    path.write_text(f"# {title}\n\nMeasured on {machine}.\n\n" + "\n".join(lines) + "\n\n" + summary.strip() + "\n")
    print(f"written to {path}")


def repeats_for(call_s: float, at_least: int, budget_s: float = 1.0, at_most: int = 41) -> int:
    """How often to time a call that took `call_s` warm: `at_least`, or more for short calls, until about
    `budget_s` of samples, so a median of milliseconds is not decided by a few samples on a noisy machine."""
    return max(at_least, min(at_most, int(budget_s / max(call_s, 1e-6))))
