"""What the monitor knows about an fsm arena run, folded from its events (live or replayed); no widgets.

A contender's median and spread come from the race's samples with the same `Timing` the arena's result uses, so
the leaderboard, the finish event and `repoos optimize` agree; the crowned one is the finish event's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from repoos_agent.agent.events import Event
from repoos_agent.measure.timing import Timing
from tui.track_board import TrackBoard

BASELINE = "baseline"


@dataclass
class Contender:
    """One proposal: its verdict and why (None until the engine has decided), and its race samples."""

    label: str
    verdict: str | None = None
    reason: str = ""
    samples: list[float] = field(default_factory=list)

    @property
    def timing(self) -> Timing | None:
        return Timing.of(self.samples) if self.samples else None


@dataclass
class FsmBoard(TrackBoard):
    """One arena run: the target, every proposal with its verdict, the race so far, and the crowned one."""

    KERNEL: ClassVar[str] = "FsmKernel"

    proposed: int = 0
    contenders: dict[str, Contender] = field(default_factory=lambda: {BASELINE: Contender(BASELINE, BASELINE)})
    turns: int = 0

    def fold(self, event: Event) -> str | None:
        """Fold a proposal, a verdict or a race turn in; the track's start line; None for the other events."""
        if event.kind == "run_started":
            self.proposed = int(event.detail.get("proposals") or 0)
            return f"run {event.run} started: {self.target}, {self.proposed} proposals"
        if event.kind == "proposal":
            label = str(event.schedule)
            self.contenders.setdefault(label, Contender(label))
            return f"proposed {label}" + (f" ({event.feedback})" if event.feedback else "")
        if event.kind == "verification":
            label = str(event.schedule)
            contender = self.contenders.setdefault(label, Contender(label))
            contender.verdict, contender.reason = str(event.detail.get("verdict")), event.feedback or ""
            return f"{label}: {contender.verdict}: {contender.reason}"
        if event.kind == "race_sample":
            self.turns = event.turn or self.turns
            for label, seconds in event.times.items():
                self.contenders.setdefault(label, Contender(label, "qualified")).samples.append(seconds)
            return f"race turn {event.turn}: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in event.times.items())
        return None

    def outcome(self) -> str:
        return f"crowned {self.crowned}"

    @property
    def crowned(self) -> str | None:
        """The crowned contender, once the run finished."""
        return self.finished.schedule if self.finished is not None and not self.failure else None

    def leaderboard(self) -> list[Contender]:
        """The contenders that raced, fastest median first, then the others in proposal order."""
        raced = sorted((c for c in self.contenders.values() if c.samples), key=lambda c: c.timing.median_s)  # type: ignore[union-attr]
        return raced + [c for c in self.contenders.values() if not c.samples]

    def over_baseline(self, contender: Contender) -> float | None:
        baseline, timing = self.contenders[BASELINE].timing, contender.timing
        return baseline.median_s / timing.median_s if baseline and timing and timing.median_s > 0 else None
