"""Reading a run log written by `repoos optimize --log` (one event per line) back into events, and playing it back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from pathlib import Path

from repoos_agent.agent.events import EVENT_KINDS, Event
from repoos_agent.errors import RepoosError

EVENT_FIELDS = {f.name for f in fields(Event)}
MAX_REPLAY_GAP_S = 2.0
"""A replay never sits idle longer than this between two events (the times it shows stay the log's own)."""


class RunLogError(RepoosError):
    """A run log that cannot be read, or a line in it that is not an event."""


@dataclass(frozen=True)
class RunLog:
    """The events of one run, in the order they were written; `runs` counts the runs the file holds."""

    path: str
    events: tuple[Event, ...]
    runs: int


@dataclass(frozen=True)
class Replay:
    """A recorded run to play back at `speed` times its own pace."""

    log: RunLog
    speed: float = 1.0


async def paced(replay: Replay, running: asyncio.Event) -> AsyncIterator[Event]:
    """The log's events at the replay's pace, each one waiting while `running` is clear (paused)."""
    previous: Event | None = None
    for event in replay.log.events:
        if previous is not None:
            delay = min((event.time - previous.time) / replay.speed, MAX_REPLAY_GAP_S)
            if delay > 0:
                await asyncio.sleep(delay)
        await running.wait()
        yield event
        previous = event


def read_run_log(path: str | Path) -> RunLog:
    """The last run in the log (a log is appended to, so it may hold several); errors name the line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise RunLogError(f"{path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise RunLogError(f"{path}: not a text file") from None
    events = [_event(path, number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    starts = [index for index, event in enumerate(events) if event.kind == "run_started"]
    if not starts:
        raise RunLogError(f"{path}: no run_started event; is this a log written by `repoos optimize --log`?")
    last = events[starts[-1]].run
    return RunLog(str(path), tuple(e for e in events[starts[-1] :] if e.run == last), len(starts))


def _event(path: str | Path, number: int, line: str) -> Event:
    where = f"{path}:{number}"
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise RunLogError(f"{where}: not JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise RunLogError(f"{where}: an event is a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - EVENT_FIELDS)
    if unknown:
        raise RunLogError(f"{where}: unknown event field(s) {', '.join(unknown)}")
    if data.get("kind") not in EVENT_KINDS:
        raise RunLogError(f"{where}: event kind {data.get('kind')!r} is not one of {', '.join(EVENT_KINDS)}")
    if not isinstance(data.get("run"), str) or not isinstance(data.get("time", 0.0), int | float):
        raise RunLogError(f"{where}: an event needs a string `run` and a numeric `time`")
    data["timed"] = tuple(tuple(span) for span in data.get("timed") or ())
    try:
        return Event(**data)
    except TypeError as error:
        raise RunLogError(f"{where}: {error}") from None
