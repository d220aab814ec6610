"""`repoos eval --cluster`: a study's instances spread over a Dask cluster, each instance whole on one worker.

An instance (kernel × size) is one task: its search, racing finish, proofs and tools run where it lands, and its
row, event logs and progress lines come back to the machine that started the study, which writes them into the
same files a local study writes. Dask does the rest a study needs from a cluster: a worker that dies has its task
run again on another (up to the scheduler's `allowed-failures`), a worker that joins late takes tasks from the
queue, and results arrive as they finish.

Timed runs never overlap on one machine. Dask's resources count per worker, not per machine, so what keeps one
machine's timed runs apart is the engine's own measurement lock: a file lock in the machine's kernel cache that every
process of the engine there takes around a timed run (`measure.lock`), a worker's as well. Compiles and proofs wait
for it as they do within one search (`backends.cc.engine_work`); the other worker's remaining work runs beside it,
and the race notes its runs as crowded (`docs/decisions.md` has what two workers on one small machine cost).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from repoos_agent.cluster import check_workers
from repoos_agent.errors import RepoosError
from repoos_agent.study.protocol import InstanceResult, StudyConfig, prepare_logs, run_instance, study_plan

if TYPE_CHECKING:
    from distributed import Client

REPORT_TOPIC = "repoos-study"
"""The Dask event topic a worker's progress lines travel on, to be printed by the study as they happen."""
FAILED = "failed"
"""An instance's `engine` when the engine failed on it on its worker (a bug: the message says where)."""
LOST = "lost"
"""An instance's `engine` when its task could not finish: its workers died as many times as the scheduler allows."""


@dataclass(frozen=True)
class InstanceOutcome:
    """What a worker sends back for one instance: its row, and its searches' event logs by file name."""

    instance: InstanceResult
    logs: dict[str, str]


def run_study_on_cluster(
    config: StudyConfig,
    client: Client,
    report: Callable[[str], None],
    finished: Callable[[list[InstanceResult]], None],
    done: tuple[InstanceResult, ...] = (),
) -> list[InstanceResult]:
    """The study's instances not in `done`, one task each; rows come back in any order and are kept in the plan's,
    each passed to `finished` with those before it as it arrives. The event logs go into the study's log folder.
    Interrupted, the tasks still queued are cancelled; what finished is already written."""
    from distributed import as_completed

    check_workers(client)
    prepare_logs(config, resumed=bool(done))
    plan = study_plan(config)
    rows: dict[tuple[str, str], InstanceResult] = {(i.kernel, i.size): i for i in done}
    remote = replace(config, log_dir=None)
    waiting = [(name, size) for name, size in plan if (name, size) not in rows]
    study = uuid.uuid4().hex[:8]  # a task's key names its study: two studies of one kernel on a cluster stay two
    futures = {  # started in the plan's order (Dask runs the higher priority first): list the longest instances first
        client.submit(
            run_instance_on_worker, name, size, remote, key=f"repoos-{study}-{name}-{size}", priority=len(waiting) - order
        ): (name, size)
        for order, (name, size) in enumerate(waiting)
    }
    client.subscribe_topic(REPORT_TOPIC, lambda event: report(event[1]))
    try:
        for future in as_completed(futures):
            name, size = futures[future]
            rows[(name, size)] = _outcome(future, name, size, config, report)
            finished([rows[key] for key in plan if key in rows])
    finally:
        with suppress(Exception):  # a client that lost its scheduler cannot cancel; nothing is left to stop then
            client.cancel(list(futures))
        client.unsubscribe_topic(REPORT_TOPIC)
    return [rows[key] for key in plan]


def _outcome(future, name: str, size: str, config: StudyConfig, report: Callable[[str], None]) -> InstanceResult:
    """A finished task's row, its logs written; a task the cluster gave up on (its workers kept dying) is a row
    marked `lost`, and a user's mistake the worker found is raised here as it would be locally."""
    from distributed import KilledWorker

    try:
        outcome: InstanceOutcome = future.result()
    except KilledWorker as error:
        report(f"{name} {size}: lost: {error}")
        return InstanceResult(name, size, (), (), engine=LOST, engine_message=f"every worker that ran it died ({error})")
    except RepoosError:
        raise
    except Exception as error:  # the task's boundary: an engine failure on one instance is its row, not the study's end
        message = f"{type(error).__name__}: {error}"
        report(f"{name} {size}: failed on its worker: {message}")
        return InstanceResult(name, size, (), (), engine=FAILED, engine_message=message)
    if config.log_dir:
        for file_name, text in outcome.logs.items():
            (Path(config.log_dir) / file_name).write_text(text, encoding="utf-8")
    return outcome.instance


def run_instance_on_worker(name: str, size: str, config: StudyConfig) -> InstanceOutcome:
    """The task: one instance run whole on the worker, its logs kept in a folder of the worker's own and sent back,
    its progress lines published as they happen."""
    from distributed import get_worker

    worker = get_worker()

    def report(line: str) -> None:
        worker.log_event(REPORT_TOPIC, f"[{worker.address}] {line}")

    with tempfile.TemporaryDirectory(prefix="repoos-study-") as logs:
        instance = run_instance(name, size, replace(config, log_dir=logs), report)
        texts = {path.name: path.read_text(encoding="utf-8") for path in Path(logs).glob("*.jsonl")}
    return InstanceOutcome(replace(instance, worker=worker.address), texts)
