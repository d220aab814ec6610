"""What a search is asked to do, apart from the search itself, so the racing finish can read it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchConfig:
    """A search's settings: who proposes, for how many turns and candidates, and how each candidate is measured."""

    backend: str = "heuristic"  # or openai:MODEL, gemini:MODEL, local:MODEL
    base_url: str | None = None
    moa: tuple[str, ...] = ()  # reference agents' specs; with them, `aggregator` proposes last
    aggregator: str | None = None
    iters: int = 5
    k: int = 1
    candidates: int = 4
    size: str | None = None
    compiler: str = "c"
    seed: int = 0
    allow_reassociation: bool = False
    timeout_s: float = 120.0
    mode: str = "dialogue"  # or "tools": the model calls the engine's tools itself
    incumbent: str | None = None  # the stored VerifiedKernel's schedule: it races in the finish and wins its ties
    constrain: bool = True  # models' replies decoded under the kernel's schedule grammar where their server can
    prompt: str = ""  # what models' prompts carry (`PromptOptions.parse`); "" is the measured default
    budget_s: float | None = None  # seconds the search may spend (`Budget`); None: every turn and race round
    verify_every: bool = False  # Z3 checks every candidate's loops, not only the finalists' (which it always checks)
    cluster: str | None = None  # a Dask cluster (address or local:N) whose workers of this CPU model take the first looks
