"""What a track adds to the MCP server: built by the module its registration names (`Track.mcp`), served beside the core tools.

The server sits above every track and a track's tools build on the server's own pieces (the
roots, `ServedTool`), so a track names its module as a string and the server imports it; the
server's tool list is its own tools followed by each registered track's, in the registry's order.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver.resources import Resource

from repoos_agent.mcp.tool_errors import ServedTool


@dataclass(frozen=True)
class TrackTools:
    """One track's tools and resources, and the paragraph of the server's instructions that says when to call them."""

    instructions: str
    tools: tuple[ServedTool, ...]
    resources: tuple[Resource, ...] = ()
