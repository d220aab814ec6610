"""Running the search inside a tool call: progress on every evaluation, and a clean stop when the client cancels.

The search is synchronous and runs its own threads, so it runs in a worker thread with
a `SearchControl`. Its events come back to the event loop through a memory stream
(the loop's token lets a foreign thread post to it) and leave as MCP progress
notifications, in order, before the result. A client's cancellation cancels this
call's scope: the search is told to stop at its next checkpoint and the call waits,
shielded, until it has (no build or timed run is abandoned halfway, the measurement
lock is released), then lets the cancellation through.
"""

from __future__ import annotations

import contextlib
import math
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.mcpserver import Context

from repoos_agent.agent.control import SearchControl
from repoos_agent.agent.events import Event, EventStream
from repoos_agent.agent.search import RACE_FINALISTS, SearchConfig, SearchResult, optimize
from repoos_agent.agent.search_report import RunBoard, SearchReport, report_search
from repoos_agent.errors import RepoosError
from repoos_agent.target import Target


async def run_search(target: Target, config: SearchConfig, board: RunBoard, ctx: Context) -> SearchReport:
    """`optimize` on `target`, its evaluations reported as progress to the caller and onto `board`."""
    events = EventStream()
    events.subscribe(board)
    control = SearchControl()
    finished = threading.Event()
    send, receive = anyio.create_memory_object_stream[Event](math.inf)
    token = anyio.lowlevel.current_token()

    def post(event: Event) -> None:
        if event.kind != "evaluation":
            return
        # Once the call is cancelled or the server is closing, nobody is waiting for progress any more.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.RunFinishedError):
            anyio.from_thread.run_sync(send.send_nowait, event, token=token)

    events.subscribe(post)

    def search() -> SearchResult:
        try:
            return optimize(target, config, events, control)
        finally:
            finished.set()

    # Upper bound on evaluations: every proposal of every agent of every dialogue, then the racing finish
    # (a Mixture-of-Agents turn pools `candidates` from each reference agent and from the aggregator).
    agents = len(config.moa) + bool(config.aggregator) if config.moa else 1
    total = config.k * config.iters * config.candidates * agents + RACE_FINALISTS
    outcome: list[SearchResult] = []
    failure: list[RepoosError] = []  # raised after the task group, which would wrap it in an ExceptionGroup
    async with anyio.create_task_group() as forwarding:
        forwarding.start_soon(_report_progress, receive, ctx, total)
        try:
            outcome.append(await anyio.to_thread.run_sync(search, abandon_on_cancel=True))
        except anyio.get_cancelled_exc_class():
            control.cancel()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait)
            raise
        except RepoosError as error:
            failure.append(error)
        finally:
            send.close()
    if failure:
        raise failure[0]
    return report_search(outcome[0])


async def _report_progress(receive: MemoryObjectReceiveStream[Event], ctx: Context, total: int) -> None:
    count = 0
    async with receive:
        async for event in receive:
            count += 1
            # Progress must grow with every notification; past the bound (never expected) it goes on without a total.
            await ctx.report_progress(count, total if count <= total else None, _describe(event))


def _describe(event: Event) -> str:
    speedup = f"{event.speedup:.2f}x" if event.speedup else "-"
    stage = "race" if event.detail.get("race") else f"dialogue {event.dialogue} turn {event.turn}"
    return f"{stage}: {event.schedule or '(source order)'}: {event.verdict} {speedup}"
