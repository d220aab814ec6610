"""The npm launcher: `node npm/bin/repoos-mcp.js` serves the SDK's client like the Python server, and `npm pack` works."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.mcp_client import connect

pytestmark = pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="needs Node.js and npm")

LAUNCHER = ROOT / "npm" / "bin" / "repoos-mcp.js"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_launcher_serves_the_client_over_stdio(monkeypatch):
    monkeypatch.setenv("REPOOS_PYTHON", sys.executable)  # the interpreter running the tests, with this worktree's code
    async with connect(["node", str(LAUNCHER), "--root", "kernels/examples"]) as server:
        tools = {tool.name for tool in (await server.session.list_tools()).tools}
        assert {"check_legality", "evaluate", "optimize"} <= tools
        result = await server.call("check_legality", {"target": "gemm", "schedule": "parallelize(k)"})
        assert result.structured_content["verdict"] == "illegal"
        refused = await server.call("ingest", {"path": "kernels/polybench/gemm.py"})
        assert refused.is_error  # the launcher passed --root on
    assert server.transport_faults == []


def test_the_launcher_exits_with_the_servers_code():
    environment = {**os.environ, "REPOOS_PYTHON": sys.executable}
    finished = subprocess.run(
        ["node", str(LAUNCHER), "--root", "/nonexistent-root"], env=environment, capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 2
    assert finished.stdout == ""
    assert "--root /nonexistent-root: not a directory" in finished.stderr


def test_a_missing_interpreter_is_a_clear_error():
    environment = {**os.environ, "REPOOS_PYTHON": "/nonexistent/python"}
    finished = subprocess.run(["node", str(LAUNCHER)], env=environment, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 127
    assert "cannot start /nonexistent/python" in finished.stderr and "REPOOS_PYTHON" in finished.stderr


def test_npm_pack_builds_the_package(tmp_path: Path):
    subprocess.run(
        ["npm", "pack", "--pack-destination", str(tmp_path)], cwd=ROOT / "npm", check=True, capture_output=True, timeout=120
    )
    (tarball,) = tmp_path.glob("repoos-mcp-*.tgz")
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        launcher = archive.getmember("package/bin/repoos-mcp.js")
    assert {"package/package.json", "package/README.md", "package/bin/repoos-mcp.js"} <= names
    assert launcher.mode & 0o111  # executable, as npm's bin needs
