"""The study's headline figures, computed from the instances (nothing here measures anything)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from repoos_agent.legality import VERDICTS
from repoos_agent.study.protocol import InstanceResult
from repoos_agent.study.statistics import Estimate, bootstrap_geometric_mean, median

TIME_PARTS = ("propose_s", "legality_s", "build_s", "measure_s")


@dataclass(frozen=True)
class StudySummary:
    """Geometric means with 95% bootstrap intervals, proposal rates, time per instance, tokens and cost."""

    instances: int
    single: Estimate  # ComPilot@T
    best_of_k: Estimate
    min_single: float
    tools: dict[str, Estimate]  # each over the instances where the tool ran and matched our outputs
    tools_ok: dict[str, int]
    best_tool: Estimate  # per instance, the fastest tool that ran correctly
    ours_over_best_tool: Estimate  # per instance, our single run / the fastest tool, on instances with both
    proposals: int
    verdicts: dict[str, int]
    rates: dict[str, float]  # share of proposals per verdict; `legal` is the runnable share
    median_wall_s: float
    median_parts_s: dict[str, float]
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None when any model's price is unknown
    by_cpu: dict[str, Estimate]  # the single-run figure per CPU model, when the instances ran on more than one


def summarize(instances: list[InstanceResult], tool_names: tuple[str, ...], seed: int) -> StudySummary:
    """Aggregate `instances`; `seed` makes the bootstrap intervals reproducible.

    Our figures are over the instances where the engine ran (not `refused`); the tools' over all."""
    ours = [i for i in instances if i.engine == "ok" and math.isfinite(i.single)]
    single = [i.single for i in ours]
    tools, tools_ok = {}, {}
    for name in tool_names:
        measured = [t.speedup for i in instances if (t := i.tool(name)) and t.status == "ok" and t.speedup]
        tools[name] = bootstrap_geometric_mean(measured, seed)
        tools_ok[name] = len(measured)
    best_tools = {id(i): _best_tool(i) for i in instances}
    with_tool = [i for i in instances if best_tools[id(i)] is not None]
    ours_with_tool = [i for i in ours if best_tools[id(i)] is not None]
    verdicts = {v: 0 for v in VERDICTS}
    for instance in instances:
        for verdict, count in instance.verdicts.items():
            verdicts[verdict] = verdicts.get(verdict, 0) + count
    proposals = sum(verdicts.values())
    costs = [r.cost_usd for i in instances for r in i.dialogues]
    return StudySummary(
        instances=len(instances),
        single=bootstrap_geometric_mean(single, seed),
        best_of_k=bootstrap_geometric_mean([i.best_of_k for i in ours], seed),
        min_single=min(single, default=math.nan),
        tools=tools,
        tools_ok=tools_ok,
        best_tool=bootstrap_geometric_mean([best_tools[id(i)] for i in with_tool], seed),
        ours_over_best_tool=bootstrap_geometric_mean([i.single / best_tools[id(i)] for i in ours_with_tool], seed),
        proposals=proposals,
        verdicts={v: c for v, c in verdicts.items() if c},
        rates={v: c / proposals for v, c in verdicts.items() if c} if proposals else {},
        median_wall_s=median([i.wall_s for i in ours]),
        median_parts_s={part: median([i.median_of(part) for i in ours]) for part in TIME_PARTS},
        tokens_in=sum(r.tokens_in for i in instances for r in i.dialogues),
        tokens_out=sum(r.tokens_out for i in instances for r in i.dialogues),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        by_cpu=_by_cpu(ours, seed),
    )


def _by_cpu(ours: list[InstanceResult], seed: int) -> dict[str, Estimate]:
    """A speedup is over a baseline timed on the same machine, but a geometric mean over machines of different
    kinds mixes what each CPU makes of the kernels: a study spread over a cluster states its figure per kind."""
    kinds = sorted({i.cpu for i in ours})
    if len(kinds) < 2:
        return {}
    return {kind: bootstrap_geometric_mean([i.single for i in ours if i.cpu == kind], seed) for kind in kinds}


def _best_tool(instance: InstanceResult) -> float | None:
    speedups = [t.speedup for t in instance.tools if t.status == "ok" and t.speedup]
    return max(speedups) if speedups else None
