"""`repoos optimize --cluster`: a search's first looks built, proved and timed on cluster workers.

A first look is one candidate proved legal, built, checked and timed against the baseline: most of a search's work,
and independent from candidate to candidate. With a cluster, each goes to a worker whose CPU model is this
machine's. A schedule ranked on another kind of CPU would be ranked by what that CPU makes of it, while the winner
runs here. The racing finish stays on this machine: its races decide what is crowned and swapped in here, and Z3
checks the finalists there as it does in any search.

The worker rebuilds the target from what is shipped: a bundled kernel's name, or a user's file's text with its
function and `--arg` specs. It writes the file into a folder of its own, so the machines need not share a disk.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from repoos_agent.agent.candidate import evaluate_candidate
from repoos_agent.agent.search_config import SearchConfig
from repoos_agent.cluster import check_workers, workers_like_this_machine
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import Evaluation
from repoos_agent.inputs import ArgSpec
from repoos_agent.target import Target, resolve_target

if TYPE_CHECKING:
    from distributed import Client


@dataclass(frozen=True)
class ShippedTarget:
    """What a worker needs to rebuild a target: a bundled kernel's name, or a user's file's name and text, its
    function and its `--arg` specs."""

    label: str
    bundled: str | None
    file_name: str = ""
    source: str = ""
    function: str = ""
    arg_specs: tuple[ArgSpec, ...] = ()


def ship(target: Target) -> ShippedTarget:
    """`target` as a worker will rebuild it."""
    if target.bundled is not None:
        return ShippedTarget(target.label, target.bundled.name)
    located = target.python_source()
    if located is None:
        raise RepoosError(f"--cluster: {target.label} has no source file to send to the workers; search it here")
    path, function = located
    return ShippedTarget(target.label, None, path.name, path.read_text(encoding="utf-8"), function, target.arg_specs)


@cache
def _rebuilt(shipped: ShippedTarget) -> Target:
    """The shipped target on this worker, rebuilt once per worker process; a user's file is written into a folder of
    the process's own, named by its text's digest."""
    if shipped.bundled is not None:
        return resolve_target(shipped.bundled)
    folder = Path(tempfile.gettempdir()) / f"repoos-shipped-{hashlib.sha256(shipped.source.encode()).hexdigest()[:16]}"
    folder.mkdir(exist_ok=True)
    path = folder / shipped.file_name
    path.write_text(shipped.source, encoding="utf-8")
    return resolve_target(f"{path}:{shipped.function}", list(shipped.arg_specs))


def first_look_on_worker(shipped: ShippedTarget, schedule: str, config: SearchConfig, stop_below_speedup: float) -> Evaluation:
    """The task: one candidate's first look on the worker, named by the caller's target."""
    evaluation = evaluate_candidate(_rebuilt(shipped), schedule, config, stop_below_speedup=stop_below_speedup)
    return replace(evaluation, target=shipped.label)


class RemoteFirstLooks:
    """A search's first looks sent to the cluster's workers of this machine's CPU model, one task each; a search's
    threads wait on them as they would on a local evaluation."""

    def __init__(self, client: Client, target: Target, config: SearchConfig) -> None:
        check_workers(client)
        self.client = client
        self.workers = workers_like_this_machine(client)
        self.shipped = ship(target)
        self.config = replace(config, cluster=None)

    def __call__(self, schedule: str, stop_below_speedup: float) -> Evaluation:
        future = self.client.submit(
            first_look_on_worker, self.shipped, schedule, self.config, stop_below_speedup, workers=self.workers, pure=False
        )
        return future.result()
