"""The tabular track's monitor as `repoos tui` runs it: named by the track's registration (`Track.monitor`).

`watch` runs `repoos tui app.py:function --db URL` and prints what `optimize --db` prints, failing
or warning as it does; `replay` plays a run log whose `run_started` names the tabular track.
A replay needs no database, so SQLAlchemy loads only for a live run.
"""

from __future__ import annotations

import argparse
import sys

from repoos_agent.errors import RepoosError
from repoos_agent.search_options import search_events
from tui.replay import Replay, RunLog
from tui.tabular_app import TabularMonitor


def watch(args: argparse.Namespace) -> int:
    """The tabular monitor on a live run of the endpoint `args.target` on `args.db`; returns the exit code."""
    from repoos_agent.tabular.endpoint_values import parse_endpoint_values
    from repoos_agent.tabular.optimize import split_endpoint
    from tui.tabular_run import LiveEndpoint

    path, function = split_endpoint(args.target)
    values = parse_endpoint_values(args.arg)
    with search_events(args) as events:
        app = TabularMonitor(LiveEndpoint(path, function, args.db, values, args.graph, events))
        result = app.run()
    if app.failure is not None:
        raise RepoosError(app.failure)
    if app.unrecorded is not None:
        print(f"repoos: warning: not recorded in the graph store: {app.unrecorded}", file=sys.stderr)
        args.unrecorded = True
    if result is not None:
        print(f"{args.target} on {result.database}: verified, {result.contract.rows_compared} rows equal to the ORM's")
        print(f"  orm {result.orm_s * 1000:.2f} ms, fast path {result.fast_s * 1000:.2f} ms: {result.speedup:.2f}x")
        return 0
    return app.return_code or 0  # Textual sets 1 when the app died of an unexpected error


def replay(log: RunLog, speed: float) -> None:
    """Replay a tabular run's log at `speed` times its own pace."""
    TabularMonitor(Replay(log, speed)).run()
