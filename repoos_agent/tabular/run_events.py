"""The events of a tabular run (`repoos optimize app.py:f --db URL`), built in one place so none says too much.

A run log is shared more readily than a command line, so what an event may carry is decided
here: the endpoint, the database URL with its password masked, the chain's clauses, the SQL
with its placeholders, the parameters' names, rows compared and timings. Never the URL itself,
a password, or the values the endpoint is called with: those are the caller's inputs (an
e-mail, a customer's id), and the placeholders and names already say what the SQL binds. A
mismatch's reason is kept as `verify_endpoint` words it, as the CLI prints it: it is the
evidence of the difference.

The kinds are `TABULAR_KINDS` of `repoos_agent.agent.events`, between `run_started` (with
`detail["track"] == TABULAR_TRACK`, the track's name: a replay finds the track's monitor by it) and `run_finished`.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from repoos_agent.agent.events import Event, EventKind, EventStream

if TYPE_CHECKING:  # the TUI reads these events without loading SQLAlchemy
    from repoos_agent.store import TabularKernel
    from repoos_agent.tabular.chain import QueryChain
    from repoos_agent.tabular.compiled import CompiledQuery
    from repoos_agent.tabular.result import TabularResult
    from repoos_agent.tabular.verify import TabularContract

TABULAR_TRACK = "tabular"


class TabularEvents:
    """Emits one tabular run's events on `stream`, all under one run id."""

    def __init__(self, stream: EventStream, run: str | None = None) -> None:
        self.stream = stream
        self.run = run or uuid.uuid4().hex[:8]

    def _emit(self, kind: EventKind, **fields: object) -> None:
        self.stream.emit(Event(kind, self.run, **fields))  # type: ignore[arg-type]

    def started(self, target: str, database: str, repeats: int) -> None:
        """`database` is already masked (`safe_url`)."""
        self._emit("run_started", detail={"track": TABULAR_TRACK, "target": target, "database": database, "repeats": repeats})

    def chain_read(self, chain: QueryChain) -> None:
        self._emit(
            "chain_read",
            detail={
                "line": chain.line,
                "style": chain.style,
                "methods": list(chain.methods),
                "session": chain.session,
                "parameters": list(chain.parameters),
            },
        )

    def compiled(self, query: CompiledQuery) -> None:
        detail = {"sql": query.sql, "placeholders": list(query.parameters), "dialect": query.dialect, "ordered": query.ordered}
        self._emit("query_compiled", detail={**detail, "tables": list(query.tables)})

    def verified(self, contract: TabularContract) -> None:
        self._emit("verification", verified="true", detail={"rows_compared": contract.rows_compared})

    def mismatch(self, reason: str) -> None:
        self._emit("verification", verified="false", feedback=reason)

    def sample(self, turn: int, orm_s: float, fast_s: float) -> None:
        """One timed call of each path, `turn` counting from 1 (the warm-ups are not samples)."""
        self._emit("race_sample", turn=turn, times={"orm_s": orm_s, "fast_s": fast_s})

    def finished(self, result: TabularResult) -> None:
        self._emit(
            "run_finished",
            speedup=result.speedup,
            times={"orm_s": result.orm_s, "fast_s": result.fast_s},
            detail={
                "rows_compared": result.contract.rows_compared,
                "orm_spread": result.orm_spread,
                "fast_spread": result.fast_spread,
            },
        )

    def failed(self, reason: str) -> None:
        """`reason` must already be free of the password (`optimize._without`)."""
        self._emit("run_finished", detail={"failed": reason})

    def stored(self, record: TabularKernel) -> None:
        """The contract is in the graph store (which store is not said: a server's URL may hold credentials)."""
        self._emit("contract_stored", detail={"function": record.function, "speedup": record.speedup})
