"""Running the search inside a tool call: progress on every evaluation, and a clean stop when the client cancels.

The search is synchronous and runs its own threads, so it runs in a worker thread with
a `SearchControl`. Its events come back to the event loop through a memory stream
(the loop's token lets a foreign thread post to it) and leave as MCP progress
notifications, in order, before the result: one per evaluation, counted towards the
most the search could make, then one for the result, which reaches the total (a search
usually makes fewer evaluations than its bound, and a bar left at 8 of 11 looks like a
search that died). A client's cancellation cancels this call's scope: the search is
told to stop at its next checkpoint and the call waits, shielded, until it has (no
build or timed run is abandoned halfway, the measurement lock is released), then lets
the cancellation through.
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
from repoos_agent.agent.search import SearchConfig, SearchResult, most_evaluations, optimize
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

    progress = SearchProgress(ctx, most_evaluations(config) + 1)
    outcome: list[SearchResult] = []
    failure: list[RepoosError] = []  # raised after the task group, which would wrap it in an ExceptionGroup
    async with anyio.create_task_group() as forwarding:
        forwarding.start_soon(progress.forward, receive)
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
    await progress.finish(outcome[0])
    return report_search(outcome[0])


class SearchProgress:
    """A call's progress notifications: each evaluation is a step towards `total` (the search's bound on evaluations,
    and one step for the result); the result is the last step and ends the bar full, however few evaluations it took."""

    def __init__(self, ctx: Context, total: int) -> None:
        self.ctx = ctx
        self.total = total
        self.steps = 0

    async def forward(self, receive: MemoryObjectReceiveStream[Event]) -> None:
        """One notification per evaluation event, in order, until the search closes the stream."""
        async with receive:
            async for event in receive:
                self.steps += 1
                # The last step is the result's; past the bound (never expected) progress goes on without a total.
                await self.ctx.report_progress(self.steps, self.total if self.steps < self.total else None, _describe(event))

    async def finish(self, result: SearchResult) -> None:
        """The result's step: progress and total meet, the total shrunk to the steps the search took."""
        self.steps += 1
        self.total = self.steps
        evaluations = f"{result.evaluations} evaluation{'s' if result.evaluations != 1 else ''}"
        await self.ctx.report_progress(self.steps, self.total, f"finished after {evaluations}: {result.finish}")


def _describe(event: Event) -> str:
    speedup = f"{event.speedup:.2f}x" if event.speedup else "-"
    stage = "race" if event.detail.get("race") else f"dialogue {event.dialogue} turn {event.turn}"
    return f"{stage}: {event.schedule or '(source order)'}: {event.verdict} {speedup}"
