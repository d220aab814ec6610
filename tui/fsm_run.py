"""An arena run for the monitor: `race_target` and the store, exactly as `repoos optimize FILE.py:f` calls them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from repoos_agent.agent.events import EventStream
from repoos_agent.errors import RepoosError
from repoos_agent.fsm import ir
from repoos_agent.fsm.arena import ArenaResult
from repoos_agent.fsm.optimize import FsmTarget, race_target, write_winner
from repoos_agent.fsm.proposals import Proposal
from repoos_agent.store import open_store


@dataclass(frozen=True)
class LiveBranchy:
    """A branchy function to race now; subscribe a run log to `events` before the app starts to record it."""

    label: str
    target: FsmTarget
    propose: Callable[[ir.Function], list[Proposal]]
    graph: str | None = None  # the store `--graph` names; None: the one `store_location` finds near the file
    events: EventStream = field(default_factory=EventStream)

    def race(self) -> ArenaResult:
        """Propose, check and race, then store the winner (a store that fails is a warning: the race is kept)."""
        path, _, node, _, _ = self.target
        result, baseline = race_target(self.label, self.target, self.propose, self.events)
        try:
            store = open_store(self.graph, path)
            try:
                write_winner(store, result, path, node, baseline, self.events)
            finally:
                store.close()
        except RepoosError as error:
            print(f"repoos: warning: not recorded in the graph store: {error}", file=sys.stderr)
        return result
