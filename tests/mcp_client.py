"""The MCP SDK's own client (`ClientSession` over `stdio_client`) connected to a real server process.

It also records what a client would choke on: any line on the server's stdout that is
not a protocol message reaches the session as a transport exception.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import ROOT


@dataclass
class Connection:
    session: ClientSession
    transport_faults: list[Exception] = field(default_factory=list)
    instructions: str | None = None  # what the server told the client at initialization

    async def call(self, name: str, arguments: dict, **options: object):
        return await self.session.call_tool(name, arguments, **options)

    async def leaderboard(self) -> dict:
        contents = (await self.session.read_resource("repoos://runs/last/leaderboard")).contents
        return json.loads(contents[0].text)


@asynccontextmanager
async def connect(
    command: list[str], env: Mapping[str, str] | None = None, errlog: TextIO = sys.stderr
) -> AsyncIterator[Connection]:
    """Start `command` in the project root with `env`, else this process's environment (PYTHONPATH, the test kernel
    cache); the server's stderr goes to `errlog`."""
    environment = dict(os.environ if env is None else env)
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=environment, cwd=str(ROOT))
    faults: list[Exception] = []

    async def record(message: object) -> None:
        if isinstance(message, Exception):
            faults.append(message)

    async with (
        stdio_client(parameters, errlog=errlog) as (read, write),
        ClientSession(read, write, message_handler=record) as session,
    ):
        initialized = await session.initialize()
        yield Connection(session, faults, initialized.instructions)
