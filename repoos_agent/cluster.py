"""Where the engine's work may run besides this process: a Dask cluster, joined by address or started here.

`repoos eval --cluster` sends it a study's instances and `repoos optimize --cluster` a search's first looks. Both
join it the same way and refuse the same workers: one on other code, or one that may not start the engine's
measurement process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from repoos_agent.backends.build import cpu_model
from repoos_agent.errors import RepoosError
from repoos_agent.measure.provenance import engine_commit

if TYPE_CHECKING:
    from distributed import Client

CLUSTER_NEEDS = "--cluster needs Dask's `distributed` (pip install 'repoos-agent[cluster]')"
WORKER_SATURATION = 1.0
"""Tasks the scheduler hands a worker per thread. Dask's default (1.1) may give a one-thread worker a second task to
queue behind its first, where an instance of minutes waits while other workers sit idle. At 1.0 the queue stays at
the scheduler, and a worker that finishes takes the next instance."""


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


def _workers_cpu() -> str:
    """A worker's CPU model, asked by reference to this function, so that each worker reads its own machine."""
    return cpu_model()


def workers_like_this_machine(client: Client) -> list[str]:
    """The workers whose CPU model is this machine's: a first look timed on another kind of CPU ranks schedules by
    what that CPU makes of them, and the kernel that wins runs here. None of them is a clear error."""
    theirs = client.run(_workers_cpu)
    here = cpu_model()
    alike = sorted(worker for worker, model in theirs.items() if model == here)
    if not alike:
        kinds = ", ".join(sorted(set(theirs.values()))) or "none"
        raise RepoosError(f"--cluster: no worker has this machine's CPU ({here}); the workers have: {kinds}")
    return alike
