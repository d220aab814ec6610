"""Where a result was measured: the engine's commit, the CPU, its cores, the date and the command.

A speedup moves with the engine's code and with the host (the LARGE NumPy study ran over sessions
whose hosts may differ), so a figure that does not say where it came from cannot be reproduced or
compared with the next one. Every writer of results, the benchmark scripts and `repoos eval`, takes
these facts from `provenance()` and writes them into each file in one of two forms:

- Markdown: `Provenance.line()` under the title;
- JSON: a top-level `provenance` object (`Provenance.as_json()`).

A CSV carries none of its own (a row before the header would break every reader of it); it is
always written beside the JSON of the same run, whose `provenance` is its sidecar (`eval.csv` and
`eval.json`).
"""

from __future__ import annotations

import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from repoos_agent.backends.build import cpu_model
from repoos_agent.measure.cores import usable_cores

CHECKOUT = Path(__file__).resolve().parents[2]
"""The engine's own checkout: the commit that matters is the code measured, wherever the command ran from."""

RESULTS_FOLDER = "benchmarks/results"
"""Writing results changes tracked files under it; that is not a change to the code measured."""


@dataclass(frozen=True)
class Provenance:
    """The facts a result needs to be reproduced: what code, on what machine, when, run how."""

    commit: str  # short hash of the checkout's HEAD; "+changes" when tracked code differs from it
    cpu: str  # /proc/cpuinfo's model name
    cores: int  # the cores this process may run on
    date: str  # UTC, to the minute
    command: str
    python: str

    def line(self) -> str:
        """The Markdown form, one sentence under a result's title."""
        return f"Commit {self.commit}, {self.cpu}, {self.cores} cores, Python {self.python}, {self.date}; `{self.command}`."

    def as_json(self) -> dict[str, object]:
        """The JSON form, a result file's top-level `provenance` object."""
        return asdict(self)


def provenance(command: str | None = None) -> Provenance:
    """This process's provenance; `command` defaults to the one it was started with (`invocation`)."""
    return Provenance(
        commit=engine_commit(),
        cpu=cpu_model(),
        cores=usable_cores(),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        command=command if command is not None else invocation(sys.argv),
        python=platform.python_version(),
    )


def engine_commit(checkout: Path = CHECKOUT) -> str:
    """HEAD's short hash, marked `+changes` when tracked files outside the results differ from it: such a result
    was measured on code no commit holds. Outside a git checkout (an installed package) it says so."""
    head = _git(checkout, "rev-parse", "--short", "HEAD")
    if not head:
        return "unknown (not a git checkout)"
    changed = _git(checkout, "status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){RESULTS_FOLDER}")
    return f"{head}+changes" if changed else head


def invocation(argv: Sequence[str]) -> str:
    """The command as a user would type it again: `python benchmarks/x.py …`, `python -m repoos_agent …` or
    `repoos …`, without the interpreter's or the script's absolute path."""
    program = Path(argv[0])
    if program.name == "__main__.py":
        head = f"python -m {program.parent.name}"
    elif program.suffix == ".py":
        head = f"python {_relative(program)}"
    else:
        head = program.name
    return " ".join([head, *map(shlex.quote, argv[1:])])


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(CHECKOUT))
    except ValueError:
        return str(path)


def _git(checkout: Path, *arguments: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(checkout), *arguments], capture_output=True, text=True, check=False)
    except OSError:  # no git on the machine
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
