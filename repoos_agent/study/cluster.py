"""`repoos eval --cluster`: a study's instances spread over a Dask cluster, each instance whole on one worker.

An instance (kernel × size) is one task: its search, racing finish, proofs and tools run where it lands, and its
row, event logs and progress lines come back to the machine that started the study, which writes them into the
same files a local study writes. Dask does the rest a study needs from a cluster: a worker that dies has its task
run again on another (up to the scheduler's `allowed-failures`), a worker that joins late takes tasks from the
queue, and results arrive as they finish.

Timed runs never overlap on one machine. Dask's resources count per worker, not per machine, so what keeps one
machine's timed runs apart is the engine's own measurement lock: a file lock in the machine's kernel cache that every
process of the engine there takes around a timed run (`measure.lock`), a worker's as well. Compiles and proofs run
beside the other worker's timing; only the timed runs wait for each other.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import engine_commit
from repoos_agent.study.protocol import InstanceResult, StudyConfig, prepare_logs, run_instance, study_plan

if TYPE_CHECKING:
    from distributed import Client

CLUSTER_NEEDS = "--cluster needs Dask's `distributed` (pip install 'repoos-agent[cluster]')"
REPORT_TOPIC = "repoos-study"
"""The Dask event topic a worker's progress lines travel on, to be printed by the study as they happen."""
FAILED = "failed"
"""An instance's `engine` when the engine failed on it on its worker (a bug: the message says where)."""
WORKER_SATURATION = 1.0
"""Tasks the scheduler hands a worker per thread. Dask's default (1.1) gives a one-thread worker a second task
to queue behind its first: an instance of fourteen minutes then waited behind another while workers sat idle (the
simulated 64-worker study took 65% over its ideal). At 1.0 the queue stays at the scheduler, and a worker that
finishes takes the next instance."""
LOST = "lost"
"""An instance's `engine` when its task could not finish: its workers died as many times as the scheduler allows."""


@dataclass(frozen=True)
class InstanceOutcome:
    """What a worker sends back for one instance: its row, and its searches' event logs by file name."""

    instance: InstanceResult
    logs: dict[str, str]


@contextmanager
def cluster_client(address: str) -> Iterator[Client]:
    """A client of the cluster at `address` (`tcp://HOST:PORT`), or of a cluster of N worker processes on this
    machine, listening on 127.0.0.1 only, for `local:N`; closed (and the local cluster stopped) on the way out."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RepoosError(CLUSTER_NEEDS) from None
    workers = _local_workers(address)
    if workers is not None:
        import dask

        with (
            dask.config.set({"distributed.worker.daemon": False, "distributed.scheduler.worker-saturation": WORKER_SATURATION}),
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    try:
        client = Client(address, timeout=20)
    except (OSError, TimeoutError, ValueError) as error:
        raise RepoosError(f"--cluster {address}: no Dask scheduler answered there ({error})") from None
    with client:
        yield client


def _local_workers(address: str) -> int | None:
    """N of `local:N`, None for a scheduler's address."""
    if not address.startswith("local:"):
        return None
    count = address.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise RepoosError(f"--cluster {address}: a local cluster is `local:N` with N workers, at least 1")
    return int(count)


def check_workers(client: Client) -> None:
    """Every worker must run this engine's code: a worker on another commit would search with other rules, and its
    rows would not belong to this study. Refused before anything runs, naming the worker."""
    here = engine_commit()
    theirs = client.run(_worker_facts)
    if not theirs:
        raise RepoosError("--cluster: the scheduler has no workers; start some (docs/cluster.md)")
    for worker, (commit, daemonic) in sorted(theirs.items()):
        if commit != here:
            raise RepoosError(f"--cluster: worker {worker} runs the engine at {commit}, this study at {here}; install the same")
        if daemonic:
            raise RepoosError(
                f"--cluster: worker {worker} runs as a daemon process, which may not start the engine's measurement "
                "process; start workers with DASK_DISTRIBUTED__WORKER__DAEMON=False (docs/cluster.md)"
            )


def _worker_facts() -> tuple[str, bool]:
    """What `check_workers` asks each worker: its engine's commit, and whether it may start processes of its own."""
    import multiprocessing

    return engine_commit(), multiprocessing.current_process().daemon


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
    futures = {  # started in the plan's order (Dask runs the higher priority first): list the longest instances first
        client.submit(
            run_instance_on_worker, name, size, remote, key=f"repoos-{name}-{size}", pure=False, priority=len(waiting) - order
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
