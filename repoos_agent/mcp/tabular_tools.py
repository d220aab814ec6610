"""The tabular track's part of the MCP server: the `optimize_endpoint` tool and the `repoos://tabular/contracts` resource.

`optimize_endpoint` runs off the event loop (`tabular_call`), on a database named by a
variable of the server's environment, never given in the call (`database_env`); the resource
lists the fast paths it stored (`tabular_contracts`).
"""

from __future__ import annotations

import inspect
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resources import FunctionResource
from pydantic import Field

from repoos_agent.mcp.database_env import DEFAULT_DATABASE_ENV
from repoos_agent.mcp.roots import AllowedRoots
from repoos_agent.mcp.tabular_call import EndpointReport, EndpointRunner
from repoos_agent.mcp.tabular_contracts import contracts_json
from repoos_agent.mcp.tool_errors import ServedTool
from repoos_agent.mcp.track_tools import TrackTools

INSTRUCTIONS = """\
A function that `ingest` reports on the `tabular` track (an ORM query ending in `.all()`) goes to `optimize_endpoint`,
which verifies its compiled SQL against the ORM on the database an environment variable of the server names."""

EndpointText = Annotated[
    str,
    Field(description="An ORM endpoint as `path/to/app.py:function` under the server's roots (ingest lists a file's functions)."),
]
DatabaseEnv = Annotated[
    str,
    Field(
        description="The name of an environment variable of the server holding the database's SQLAlchemy URL (a name "
        "of the form REPOOS_…DB_URL). Never the URL itself: a URL in a tool call lands in the transcript with its password."
    ),
]
EndpointValues = Annotated[
    list[str] | None,
    Field(
        description="Values of the endpoint's parameters to verify and race with, NAME=VALUE each (`min_cancelled=30`, "
        "`region=north`; an integer, a float, else text), over its defaults. Bound as query parameters, never spliced into SQL."
    ),
]


def served(roots: AllowedRoots) -> TrackTools:
    """The tool and the resource, reading endpoint files and stores under `roots` only."""
    endpoints = EndpointRunner(roots)

    async def optimize_endpoint(
        target: EndpointText,
        ctx: Context,
        database_env: DatabaseEnv = DEFAULT_DATABASE_ENV,
        args: EndpointValues = None,
        store: Annotated[
            bool,
            Field(
                description="Record the verified contract as the function's TabularKernel in the graph store, where "
                "`repoos_agent.tabular.swap.install(app)` finds it and the served app then runs the fast path."
            ),
        ] = True,
    ) -> EndpointReport:
        """Compile an ORM endpoint (a function returning one SQLAlchemy `db.query(...)....all()`, track `tabular` in
        ingest) to a fast path: its statement compiled by SQLAlchemy for the live database, proved to return the
        ORM's rows on that database, then timed against the ORM alternately on one session. Takes seconds.

        The result's `sql` has placeholders: the endpoint's values are bound, never written into it. `speedup` is
        the ORM's median time over the fast path's. A query the track cannot compile is refused at its
        file:line:column; the database is named by `database_env`, a variable the server was started with."""
        return await endpoints.run(target, database_env, args, store, ctx)

    contracts = FunctionResource(
        uri="repoos://tabular/contracts",
        name="tabular-contracts",
        description="The endpoints' verified fast paths in the graph store (key, SQL with placeholders, speedup, "
        "when recorded): what optimize_endpoint stored",
        mime_type="application/json",
        fn=lambda: contracts_json(roots),
    )
    tool = ServedTool.from_function(optimize_endpoint, description=inspect.getdoc(optimize_endpoint))
    return TrackTools(INSTRUCTIONS, (tool,), (contracts,))
