"""What `optimize_endpoint` found: its own module, since the run's events describe it and the run makes it."""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.tabular.verify import TabularContract


@dataclass(frozen=True)
class TabularResult:
    """What the command found: the contract, both paths' median times, and where it ran (without credentials)."""

    contract: TabularContract
    orm_s: float
    fast_s: float
    database: str
    orm_spread: float = 0.0  # the samples' relative interquartile spread (`Timing`)
    fast_spread: float = 0.0
    run: str = ""  # the id its events carry

    @property
    def speedup(self) -> float:
        return self.orm_s / self.fast_s if self.fast_s else 0.0
