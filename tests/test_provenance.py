"""Every result says where it was measured: the engine's commit, the CPU, its cores, the date and the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repoos_agent.measure.provenance import engine_commit, invocation, provenance
from repoos_agent.study import StudyConfig, summarize, write_outputs

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import report

COMMAND = "python benchmarks/foundation.py --kernels gemm"


def cpu_in_proc() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))


def head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_provenance_names_this_checkouts_commit_the_cpu_its_cores_and_the_command():
    facts = provenance(COMMAND)
    assert facts.commit.removesuffix("+changes") == head()
    assert facts.cpu == cpu_in_proc()
    assert facts.cores == len(os.sched_getaffinity(0))
    assert facts.command == COMMAND
    line = facts.line()
    assert line.startswith(f"Commit {facts.commit}, {facts.cpu}, {facts.cores} cores, Python ")
    assert line.endswith(f"; `{COMMAND}`.")


def git(repository: Path, *arguments: str) -> None:
    identity = ("-c", "user.name=t", "-c", "user.email=t@example.com")
    subprocess.run(["git", *identity, "-C", str(repository), *arguments], check=True, capture_output=True)


def test_a_result_measured_on_uncommitted_code_says_so_but_writing_results_is_no_change(tmp_path):
    assert engine_commit(tmp_path) == "unknown (not a git checkout)"
    git(tmp_path, "init", "-q")
    code, result = tmp_path / "kernel.py", tmp_path / "benchmarks" / "results" / "table.md"
    result.parent.mkdir(parents=True)
    code.write_text("x = 1\n")
    result.write_text("1.00x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    commit = engine_commit(tmp_path)
    assert "+" not in commit and len(commit) >= 7
    result.write_text("2.00x\n")
    assert engine_commit(tmp_path) == commit
    code.write_text("x = 2\n")
    assert engine_commit(tmp_path) == f"{commit}+changes"


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([str(ROOT / "benchmarks" / "reach.py"), "--corpus", "all"], "python benchmarks/reach.py --corpus all"),
        (["/venv/site/repoos_agent/__main__.py", "eval", "--only", "a b"], "python -m repoos_agent eval --only 'a b'"),
        (["/venv/bin/repoos", "eval", "--sizes", "LARGE"], "repoos eval --sizes LARGE"),
    ],
)  # fmt: skip
def test_the_command_is_written_as_a_user_would_type_it_again(argv, command):
    assert invocation(argv) == command


def test_a_benchmark_table_carries_its_provenance_under_the_title(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "foundation.py"), "--kernels", "gemm"])
    report.write_results("foundation.md", "Foundation benchmark", ["| kernel |", "|---|", "| gemm |"], "done")
    title, blank, line, *_ = (tmp_path / "foundation.md").read_text().splitlines()
    assert (title, blank) == ("# Foundation benchmark", "")
    assert line.startswith(f"Commit {head()}") and f", {cpu_in_proc()}, {len(os.sched_getaffinity(0))} cores," in line
    assert line.endswith(f"; `{COMMAND}`.")


def test_an_eval_json_carries_the_studys_provenance_for_itself_and_its_csv(tmp_path):
    config = StudyConfig(kernels=("gemm",))
    facts = provenance("repoos eval --kernels gemm")
    write_outputs(tmp_path, config, [], summarize([], (), 0), facts)
    written = json.loads((tmp_path / "eval.json").read_text())["provenance"]
    assert written == facts.as_json()
    assert {"commit", "cpu", "cores", "date", "command"} <= written.keys()
    assert written["command"] == "repoos eval --kernels gemm" and written["cpu"] == cpu_in_proc()
