"""What a finished search writes to the graph store: every evaluation, then the racing winner as the VerifiedKernel.

Here, on the agent's side, not in the store: the store is downstream of the search and
records evaluations and winners, whoever found them; only the agent knows what a search
result holds and which of it to keep.
"""

from __future__ import annotations

from repoos_agent.agent.search import SearchConfig, SearchResult
from repoos_agent.store.graph import GraphStore
from repoos_agent.store.recording import record_evaluation, record_winner
from repoos_agent.store.records import VerifiedKernel
from repoos_agent.target import Target


def record_search(store: GraphStore, target: Target, result: SearchResult, config: SearchConfig) -> VerifiedKernel | None:
    """Every evaluation of an optimize run, then its racing winner as the VerifiedKernel (not for a cancelled run)."""
    for entry in result.leaderboard:
        record_evaluation(store, target, entry.evaluation, config.compiler)
    if result.cancelled:
        return None
    return record_winner(
        store,
        target,
        result.best.evaluation if result.best else None,
        size=result.size,
        speedup=result.best_speedup,
        spread=result.best_spread,
        compiler=config.compiler,
        seed=config.seed,
        allow_reassociation=config.allow_reassociation,
    )
