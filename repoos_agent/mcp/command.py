"""`repoos mcp` and `repoos-mcp`: start the server over stdio (what Claude Code and Codex launch) or streamable HTTP."""

from __future__ import annotations

import argparse
import sys

from repoos_agent.entry_point import run_command
from repoos_agent.errors import RepoosError
from repoos_agent.mcp.roots import AllowedRoots

DEFAULT_HOST = "127.0.0.1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory whose Python files the server may read (repeatable; default the working directory)",
    )
    parser.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help=f"serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to {DEFAULT_HOST})",
    )


def host_and_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise RepoosError(f"--http {text}: expected [HOST:]PORT with PORT in 1-65535")
    return host or DEFAULT_HOST, int(port)


def serve(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin (stdio) or the process is interrupted (HTTP)."""
    # Imported here, not at the top: the SDK takes most of a second to import and every other `repoos` command runs without it.
    from repoos_agent.mcp.server import build_server

    roots = AllowedRoots(args.root or ["."])
    address = host_and_port(args.http) if args.http else None
    server = build_server(roots)
    if address is None:
        server.run("stdio")
    else:
        host, port = address
        print(f"repoos mcp: serving streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr)
        server.run("streamable-http", host=host, port=port)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The `repoos-mcp` entry point: `repoos mcp` under its own name."""
    parser = argparse.ArgumentParser(prog="repoos-mcp", description="RepoOS Agent's MCP server for coding assistants.")
    add_arguments(parser)
    parser.set_defaults(run=serve)
    return run_command(parser.parse_args(argv), prog=parser.prog)
