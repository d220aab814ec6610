"""The engine calls the monitor makes besides the search: a row's generated code, and saving the winner.

Both go through the engine's own functions (`operations.show_code`, the store's
`save_winner`), bound to one target and search configuration; the app receives them as
plain callables and runs them off the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.agent import operations
from repoos_agent.agent.events import Event
from repoos_agent.agent.search import SearchConfig, evaluate_candidate
from repoos_agent.errors import RepoosError
from repoos_agent.store.recording import save_winner
from repoos_agent.target import Target


@dataclass(frozen=True)
class TargetActions:
    target: Target
    config: SearchConfig
    graph: str | None = None  # the store `--graph` names; None: the one `store_location` finds

    def code(self, schedule: str, language: str) -> str:
        """The generated C or MLIR of `schedule`, as the `show_code` tool returns it."""
        shown = operations.show_code(self.target, schedule, "mlir" if language == "mlir" else "c")
        note = f"\n// … cut at {len(shown.code)} characters (`repoos show` prints it all)\n" if shown.truncated else ""
        return shown.code + note

    def save_best(self, best: Event) -> str:
        """Make `best` the function's VerifiedKernel, as `optimize` does with its winner.

        The event carries figures, not the evaluation a contract is made of, so the schedule
        is evaluated once more (proved, Z3-verified, built from the cache, outputs checked);
        the contract keeps the search's own measurement of it."""
        schedule = best.schedule or ""
        config = self.config
        evaluation = evaluate_candidate(self.target, schedule, config, verify=True)  # the store keeps only what Z3 checked
        if evaluation.verdict != "legal" or evaluation.correct is False:
            raise RepoosError(f"`{schedule}` was not saved: {evaluation.verdict}: {evaluation.feedback}")
        contract = save_winner(
            self.target,
            evaluation,
            self.graph,
            size=config.size,
            speedup=best.speedup,
            spread=best.spread,
            compiler=config.compiler,
            seed=config.seed,
            allow_reassociation=config.allow_reassociation,
        )
        return f"`{schedule}` is now the VerifiedKernel of {contract.function} ({contract.speedup:.2f}x)"
