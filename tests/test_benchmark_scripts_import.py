"""Every benchmark script imports: a script is run by hand, rarely, and an engine change that breaks its imports
(a function moved to another module) would otherwise be found by the next person to measure something."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT

SCRIPTS = sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py"))


def test_there_are_benchmark_scripts():
    assert {"reach", "reach_npbench", "swap", "report"} <= set(SCRIPTS)


def test_every_benchmark_script_imports():
    """One interpreter imports them all, from benchmarks/ as `python benchmarks/x.py` would."""
    program = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run(
        [sys.executable, "-c", program, *SCRIPTS], cwd=ROOT / "benchmarks", capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        pytest.fail(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "a benchmark script failed to import")
