"""The graph store under faults: damaged files, a killed writer, an unreachable server, and the CLI writing to it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repoos_agent.store import (
    Function,
    Schedule,
    SQLiteStore,
    Statement,
    StoreError,
    VerifiedKernel,
    function_key,
    missing_store,
    store_location,
)
from repoos_agent.store.recording import record_ingest
from tests.conftest import ROOT

GEMM = ROOT / "kernels" / "polybench" / "gemm.py"


def test_a_damaged_store_file_is_reported_and_left_untouched(tmp_path: Path):
    path = tmp_path / "graph.sqlite"
    store = SQLiteStore(path)
    record_ingest(store, GEMM)
    store.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page, overwritten
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"graph.sqlite is damaged or not a RepoOS graph .* left untouched"):
        SQLiteStore(path)
    assert path.read_bytes() == bytes(data)


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path):
    text = tmp_path / "notes.sqlite"
    text.write_text("my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="damaged or not a RepoOS graph"):
        SQLiteStore(text)
    assert text.read_text() == "my notes, not a database\n" * 200
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")
    with pytest.raises(StoreError, match="it has no RepoOS tables"):
        SQLiteStore(other)
    with sqlite3.connect(other) as db:
        assert db.execute("SELECT name FROM users").fetchall() == [("ada",)]


def test_kill_9_during_a_long_ingest_loses_nothing_committed(tmp_path: Path):
    """A writer killed mid-ingest: every function it reported committed is there, whole, after reopening."""
    sources = tmp_path / "sources"
    sources.mkdir()
    for number in range(400):
        (sources / f"kernel_{number:03d}.py").write_text(GEMM.read_text())
    store_path = tmp_path / "graph.sqlite"
    writer = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from repoos_agent.store import SQLiteStore
        from repoos_agent.store.recording import record_ingest
        store = SQLiteStore({str(store_path)!r})
        for path in sorted(Path({str(sources)!r}).glob("*.py")):
            record_ingest(store, path)
            print(path, flush=True)
    """)
    process = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    committed = [process.stdout.readline().strip() for _ in range(25)]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    store = SQLiteStore(store_path)  # opens: intact, WAL replayed
    for path in committed:
        function = store.get(Function, function_key(path, "gemm"))
        assert function is not None and function.baseline_c
        assert len(store.related(function, "HAS_STATEMENT", Statement)) == 2
    assert len(committed) <= store.count(Function) // 2 < 400


def test_a_store_whose_creator_died_before_its_schema_is_opened_as_new(tmp_path: Path):
    path = tmp_path / "graph.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")  # what a first process writes before its schema transaction
    connection.close()
    store = SQLiteStore(path)
    try:
        assert store.count(Function) == 0
    finally:
        store.close()


def test_an_unreachable_neo4j_server_is_one_clear_warning_and_the_result_is_kept(repoos, tmp_path: Path):
    result = repoos("ingest", str(GEMM), "--graph", "bolt://127.0.0.1:9", cwd=tmp_path)
    assert result.returncode == 3  # the ingest itself is done and printed; only its record is missing
    assert result.stderr.startswith("repoos: warning: not recorded in the graph store: cannot reach the Neo4j server at bolt")
    assert "Traceback" not in result.stderr and "gemm" in result.stdout
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_cli_commands_record_in_the_working_directory_when_no_store_is_found(repoos, tmp_path: Path):
    """ingest, check with a schedule, and optimize write to a new .repoos/graph.sqlite in the working directory
    when there is none above the kernel's file or the working directory."""
    kernel, work = tmp_path / "lib" / "gemm.py", tmp_path / "work"
    kernel.parent.mkdir()
    work.mkdir()
    shutil.copy(GEMM, kernel)
    env = {"REPOOS_GRAPH": ""}
    args = [
        f"--arg={spec}"
        for spec in ("ni=20", "nj=25", "nk=30", "alpha=1.5", "beta=1.2", "C=f64[ni,nj]", "A=f64[ni,nk]", "B=f64[nk,nj]")
    ]
    assert repoos("ingest", str(kernel), cwd=work, env=env).returncode == 0
    assert repoos("check", f"{kernel}:gemm", "parallelize(i)", "--no-measure", *args, cwd=work, env=env).returncode == 0
    store = SQLiteStore(work / ".repoos" / "graph.sqlite")
    gemm = store.get(Function, function_key(kernel, "gemm"))
    assert gemm is not None and gemm.baseline_c
    assert [(s.text, s.verdict, s.verified) for s in store.related(gemm, "TRIED", Schedule)] == [
        ("parallelize(i)", "legal", "true")
    ]
    optimized = repoos("optimize", f"{kernel}:gemm", *args, "--iters", "1", "--candidates", "2", "--json", cwd=work, env=env)
    assert optimized.returncode == 0, optimized.stderr
    assert json.loads(optimized.stdout)["verified_kernel"] == gemm.key
    contract = store.get(VerifiedKernel, gemm.key)
    assert contract.source_hash == gemm.source_hash and Path(contract.library).exists()
    assert len(store.related(gemm, "TRIED", Schedule)) >= 2  # the search's evaluations, besides the check's
    assert not (kernel.parent / ".repoos").exists()


def test_cli_commands_record_in_the_project_store_found_above(repoos, tmp_path: Path):
    """Run from a subdirectory, on a kernel elsewhere in the project: the store at the project's root gets the record,
    the same store `repoos_agent.swap` of that kernel reads, wherever its program is started."""
    project = tmp_path.resolve() / "project"
    kernel, work = project / "src" / "gemm.py", project / "notebooks" / "week1"
    kernel.parent.mkdir(parents=True)
    work.mkdir(parents=True)
    shutil.copy(GEMM, kernel)
    SQLiteStore(project / ".repoos" / "graph.sqlite").close()
    assert repoos("ingest", str(kernel), cwd=work, env={"REPOOS_GRAPH": ""}).returncode == 0
    store = SQLiteStore(project / ".repoos" / "graph.sqlite")
    assert store.get(Function, function_key(kernel, "gemm")) is not None
    assert not (work / ".repoos").exists() and not (kernel.parent / ".repoos").exists()


def test_the_store_is_found_as_git_finds_its_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """--graph, else $REPOOS_GRAPH, else the first .repoos/graph.sqlite above the function's file, then above the
    working directory, else a new one in the working directory."""
    project, elsewhere = tmp_path.resolve() / "project", tmp_path.resolve() / "elsewhere"
    kernel, work = project / "src" / "deep" / "kernels.py", elsewhere / "sub"
    kernel.parent.mkdir(parents=True)
    work.mkdir(parents=True)
    monkeypatch.delenv("REPOOS_GRAPH")
    monkeypatch.chdir(work)
    assert store_location(near=kernel) == str(work / ".repoos" / "graph.sqlite")
    assert missing_store(near=kernel) == (
        f"there is no graph store: no .repoos/graph.sqlite in {kernel.parent} or {work} or a directory above, "
        "below the ceilings in $REPOOS_CEILING_DIRECTORIES"
    )
    SQLiteStore(elsewhere / ".repoos" / "graph.sqlite").close()
    assert store_location(near=kernel) == str(elsewhere / ".repoos" / "graph.sqlite")
    SQLiteStore(project / ".repoos" / "graph.sqlite").close()
    assert store_location(near=kernel) == str(project / ".repoos" / "graph.sqlite")
    assert store_location() == str(elsewhere / ".repoos" / "graph.sqlite")
    assert missing_store(near=kernel) == ""
    monkeypatch.setenv("REPOOS_GRAPH", str(tmp_path / "named.sqlite"))
    assert store_location(near=kernel) == str(tmp_path / "named.sqlite")
    assert missing_store(near=kernel) == f"there is no graph store at {tmp_path / 'named.sqlite'}"
    assert store_location("bolt://db:7687", near=kernel) == "bolt://db:7687"


def test_a_store_above_a_ceiling_directory_is_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A store left in a shared parent (`/tmp/.repoos`) is not picked up by a project below a ceiling, as
    GIT_CEILING_DIRECTORIES keeps git from finding a repository there; without the ceiling it is."""
    shared, project = tmp_path.resolve(), tmp_path.resolve() / "project"
    kernel = project / "src" / "kernels.py"
    kernel.parent.mkdir(parents=True)
    SQLiteStore(shared / ".repoos" / "graph.sqlite").close()
    monkeypatch.delenv("REPOOS_GRAPH")
    monkeypatch.chdir(project)
    monkeypatch.setenv("REPOOS_CEILING_DIRECTORIES", f"/nonexistent{os.pathsep}{shared}")
    assert store_location(near=kernel) == str(project / ".repoos" / "graph.sqlite")
    assert missing_store(near=kernel).startswith("there is no graph store")
    monkeypatch.setenv("REPOOS_CEILING_DIRECTORIES", "")
    assert store_location(near=kernel) == str(shared / ".repoos" / "graph.sqlite")
