"""A tabular run for the monitor: `optimize_endpoint` and the store, exactly as `repoos optimize PATH:F --db URL` calls them.

Only a live run imports this module (and with it SQLAlchemy); a replay needs neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from repoos_agent.agent.events import EventStream
from repoos_agent.store import open_store
from repoos_agent.tabular.optimize import optimize_endpoint, write_contract
from repoos_agent.tabular.result import TabularResult


@dataclass(frozen=True)
class LiveEndpoint:
    """An endpoint to optimize now; subscribe a run log to `events` before the app starts to record it."""

    path: str
    function: str
    url: str = field(repr=False)  # holds the password: never shown, never logged
    values: Mapping[str, object] = field(default_factory=dict)
    graph: str | None = None  # the store `--graph` names; None: the one `store_location` finds near `path`
    events: EventStream = field(default_factory=EventStream)

    def optimize(self) -> TabularResult:
        """Compile, verify and race the endpoint, its events on `events`; raises RepoosError as the CLI would."""
        return optimize_endpoint(self.path, self.function, self.url, self.values, self.events)

    def store(self, result: TabularResult) -> str:
        """Store the contract as `repoos optimize` does (a `contract_stored` event); returns the function it belongs to."""
        store = open_store(self.graph, self.path)
        try:
            return write_contract(store, result, self.path, self.events).function
        finally:
            store.close()
