"""The fsm monitor as `repoos tui` runs it: named by the track's registration (`Track.monitor`).

`watch` runs `repoos tui FILE.py:f --arg data=bytes[N]` (or `fsm:crc32`) on a function the fsm track takes, and
prints the race as `repoos optimize` prints it; `replay` plays a run log whose `run_started` names the fsm track.
"""

from __future__ import annotations

import argparse

from repoos_agent.agent.search_report import backend_spec
from repoos_agent.errors import RepoosError
from repoos_agent.fsm.optimize import proposer_for, race_table
from repoos_agent.fsm.track import target_inputs
from repoos_agent.ingest.parse import text
from repoos_agent.search_options import search_events
from tui.fsm_app import FsmMonitor
from tui.fsm_run import LiveBranchy
from tui.replay import Replay, RunLog


def watch(args: argparse.Namespace) -> int:
    """The fsm monitor on a live race of `args.target`; returns the exit code."""
    target = target_inputs(args)
    propose = proposer_for(backend_spec(args.backend, args.model), text(target[2]), args.base_url, args.constrain)
    with search_events(args) as events:
        app = FsmMonitor(LiveBranchy(args.target, target, propose, args.graph, events))
        result = app.run()
    if app.failure is not None:
        raise RepoosError(app.failure)
    if result is not None:
        print(race_table(result))
        return 0
    return app.return_code or 0  # Textual sets 1 when the app died of an unexpected error


def replay(log: RunLog, speed: float) -> None:
    """Replay an arena run's log at `speed` times its own pace."""
    FsmMonitor(Replay(log, speed)).run()
