"""Shared fixtures: a private kernel cache and graph store per test session, paths to the example kernels."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "kernels" / "examples"

# The suite starts hundreds of Python processes (CLI runs, timed workers, peers, servers), each importing the
# engine. An environment that never writes bytecode (PYTHONDONTWRITEBYTECODE) makes every one of them compile the
# engine from source again; the suite writes it once, to the `__pycache__` folders git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def marked_slow(names: Iterable[str], slow: Collection[str]) -> list:
    """`names` as parametrize values, those in `slow` marked for the slow set, so a sweep keeps its other cases by default."""
    return [pytest.param(name, marks=pytest.mark.slow) if name in slow else name for name in names]


@pytest.fixture(scope="session", autouse=True)
def private_kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every build in the tests starts from an empty cache, so builds are really exercised."""
    path = tmp_path_factory.mktemp("kernel-cache")
    os.environ["REPOOS_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session", autouse=True)
def store_ceiling(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No walk for a graph store climbs above the session's temporary folders, so a `.repoos/graph.sqlite` left
    in `/tmp` or a home directory cannot change what a test finds (as GIT_CEILING_DIRECTORIES does for git)."""
    ceiling = tmp_path_factory.getbasetemp().resolve()
    os.environ["REPOOS_CEILING_DIRECTORIES"] = str(ceiling)
    return ceiling


@pytest.fixture(scope="session", autouse=True)
def private_graph_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Commands record to a graph store of the test session's own, never to the checkout's .repoos/."""
    path = tmp_path_factory.mktemp("graph") / "graph.sqlite"
    os.environ["REPOOS_GRAPH"] = str(path)
    return path


@pytest.fixture
def repoos_command() -> list[str]:
    """The installed CLI, run as a user would, through the interpreter running the tests."""
    return [sys.executable, "-m", "repoos_agent"]


@dataclass(frozen=True)
class Ran:
    """A command's end as its caller sees it, whether it ran in a process of its own or in the test's."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def repoos(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """The CLI's `main` run in the test's process, from the checkout, with `env` set for the call: what a command
    prints and its exit code, without the second of interpreter start and imports a process of its own costs. What
    only a process shows (the installed entry point, no traceback, a compiler chosen by `CC`) keeps `repoos_command`."""
    from repoos_agent.cli import main

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Ran:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors and --help end the process it would have had
            code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture(scope="session")
def server():
    """One real MariaDB (Debian's `mariadb-server`, a temporary data directory) for every tabular test."""
    from repoos_agent.tabular.server import MariaDBServer

    with MariaDBServer() as running:
        yield running


@pytest.fixture(scope="session")
def app(server):
    """The bundled revenue app on that server, filled with 3,000 seeded rows: its `main` and `database` modules."""
    os.environ["REVENUE_DB_URL"] = server.url()
    from kernels.apps.revenue_app import database, main
    from kernels.apps.revenue_app.fill import fill

    with database.SessionLocal() as db:
        fill(db, 3000, seed=5)
    return main, database
