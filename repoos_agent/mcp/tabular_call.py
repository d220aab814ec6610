"""`optimize_endpoint` as a tool call: the tabular track's blocking database work off the event loop, errors naming the field.

The call checks what it can before touching the database (the target under the roots, the
variable `database_env` names, the `args`), then runs `repoos_agent.tabular.optimize` in a
worker thread, one run at a time: importing an endpoint's module changes `sys.modules` and
`sys.path`, and two races on one database would time each other. The engine words its
errors for the CLI (`--db`, `--arg`); here they name the tool's fields instead, and every
message passes through `NamedDatabase.without_credentials`, so no password reaches a
result, an error, the server's log or the graph store (whose record has no URL at all).
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from repoos_agent.errors import RepoosError
from repoos_agent.inputs import MCP_FIELDS, InputError
from repoos_agent.mcp.database_env import NamedDatabase, database_from_env
from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.store import open_store
from repoos_agent.tabular.endpoint_values import parse_endpoint_values

_GIVE_VALUE = re.compile(r"give it as --arg (\S+)")


@dataclass(frozen=True)
class EndpointReport:
    """An ORM endpoint's verified fast path and its race against the ORM on one session of the named database."""

    target: str
    function: str  # the function's key in the graph store (`/abs/path.py:name`)
    database: str  # the URL with its password masked
    sql: str  # the dialect's SQL with placeholders: values are bound, never written into it
    parameters: tuple[str, ...]  # the endpoint parameters the placeholders bind, in order
    rows_compared: int  # rows of the ORM's result the fast path's equalled
    orm_ms: float  # median of alternate timed calls, after a warm-up each
    fast_ms: float
    speedup: float  # orm_ms / fast_ms
    stored: bool  # recorded as the function's TabularKernel in the graph store
    store_warning: str  # why it was not recorded although `store` asked for it ("" otherwise)


class EndpointRunner:
    """Runs `optimize_endpoint` calls on files under `roots`, one at a time."""

    def __init__(self, roots: AllowedRoots) -> None:
        self.roots = roots
        self._one_run = threading.Lock()
        self._imported: dict[Path, int] = {}  # each endpoint file's modification time when its module was imported

    async def run(self, target: str, database_env: str, args: list[str] | None, store: bool, ctx: Context) -> EndpointReport:
        """Check the call's fields, then verify and race the endpoint in a worker thread, with a progress step each side."""
        path_text, _, function = target.rpartition(":")
        if not path_text or not function.isidentifier():
            raise ToolError(f"target: `{target}`: give the endpoint as path/to/app.py:function")
        try:
            path = self.roots.python_file(path_text)
        except RepoosError as error:
            raise ToolError(f"target: {error}") from None
        try:
            database = database_from_env(database_env)
            values = parse_endpoint_values(args or ())
        except InputError as error:
            raise ToolError(error.for_fields(MCP_FIELDS)) from None
        except RepoosError as error:
            raise ToolError(str(error)) from None
        await ctx.report_progress(0, 1, f"verifying `{function}` against the ORM on {database.masked}, then racing both")
        call = EndpointCall(target, path_text, path, function, database, values, store)
        report = await anyio.to_thread.run_sync(self._locked, call)
        await ctx.report_progress(1, 1, f"verified {report.rows_compared} rows; the fast path ran {report.speedup:.2f}x the ORM")
        return report

    def _locked(self, call: EndpointCall) -> EndpointReport:
        with self._one_run:
            self._forget_if_edited(call.path)
            return call.run()

    def _forget_if_edited(self, path: Path) -> None:
        """Drop the endpoint's module when its file changed since this server imported it: the engine imports a
        module once per process, and an assistant that edits the endpoint and calls again must be verifying the edit,
        not the function as it was when the server first ran it."""
        try:
            modified = path.stat().st_mtime_ns
        except OSError:
            return  # no file to import: the engine says so, naming the target
        if self._imported.get(path, modified) != modified:
            for name, module in list(sys.modules.items()):
                if getattr(module, "__file__", None) and Path(module.__file__).resolve() == path:
                    del sys.modules[name]
        self._imported[path] = modified


@dataclass(frozen=True)
class EndpointCall:
    """One call's checked fields: the caller's target text, the resolved file under the roots, the database, the values."""

    target: str
    path_text: str
    path: Path
    function: str
    database: NamedDatabase
    values: dict[str, object]
    store: bool

    def run(self) -> EndpointReport:
        # Imported here: SQLAlchemy takes a third of a second to import, and the server's other tools never need it.
        from repoos_agent.tabular.optimize import optimize_endpoint, record_of

        try:
            result = optimize_endpoint(str(self.path), self.function, self.database.url, self.values)
        except RepoosError as error:
            raise ToolError(self._safe(self._in_tool_fields(str(error)))) from None
        except Exception as error:  # the endpoint's own module or a driver failing otherwise: a message, never a traceback
            raise ToolError(self._safe(f"target: running `{self.function}` failed: {type(error).__name__}: {error}")) from None
        record = record_of(result, str(self.path))
        warning = self._write(result) if self.store else ""
        contract = result.contract
        return EndpointReport(
            target=self.target,
            function=record.function,
            database=self.database.masked,
            sql=contract.query.sql,
            parameters=contract.query.parameters,
            rows_compared=contract.rows_compared,
            orm_ms=result.orm_s * 1000,
            fast_ms=result.fast_s * 1000,
            speedup=result.speedup,
            stored=self.store and not warning,
            store_warning=warning,
        )

    def _write(self, result) -> str:
        """Record the contract in the store `repoos_agent.tabular.swap` reads for this file; why not, if it could not."""
        from repoos_agent.tabular.optimize import write_contract

        try:
            store = open_store(None, self.path)
            try:
                write_contract(store, result, str(self.path))
            finally:
                store.close()
        except RepoosError as error:
            return self._safe(f"not recorded in the graph store: {error}")
        return ""

    def _in_tool_fields(self, message: str) -> str:
        """The engine's message, worded for the CLI, naming this tool's fields and the caller's own path."""
        message = message.replace(str(self.path), self.path_text)
        if message.startswith("--db "):
            return f"database_env: {self.database.variable}: {message.removeprefix('--db ')}"
        if message.startswith("--arg "):
            return f"args: {message.removeprefix('--arg ')}"
        if _GIVE_VALUE.search(message):
            return "args: " + _GIVE_VALUE.sub(r'add "\1" to `args`', message)
        return f"target: {message}"

    def _safe(self, message: str) -> str:
        return self.database.without_credentials(message)
