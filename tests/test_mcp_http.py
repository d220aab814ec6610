"""`repoos mcp --http`: streamable HTTP on the loopback interface, served to the SDK's HTTP client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """IPv4 addresses with a socket listening on `port`, from the kernel's table (/proc/net/tcp: hex, little-endian)."""
    addresses = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            addresses.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return addresses


@pytest.mark.anyio
async def test_http_serves_the_tools_on_the_loopback_interface():
    port = free_port()
    command = [sys.executable, "-m", "repoos_agent", "mcp", "--http", str(port)]
    server = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(30):
            while server.poll() is None:
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                await anyio.sleep(0.1)
        assert server.poll() is None, server.stderr.read().decode()
        url = f"http://127.0.0.1:{port}/mcp"
        async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("check_legality", {"target": "gemm", "schedule": "interchange(j, k)"})
        assert result.structured_content["verdict"] == "legal"
        assert listening_addresses(port) == {"127.0.0.1"}
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_malformed_http_address_is_a_clear_error(repoos_command):
    finished = subprocess.run([*repoos_command, "mcp", "--http", "localhost:http"], capture_output=True, text=True, cwd=ROOT)
    assert finished.returncode == 2 and finished.stdout == ""
    assert "--http localhost:http: expected [HOST:]PORT" in finished.stderr
