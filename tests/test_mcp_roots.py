"""The MCP server's roots: the file the engine opens is the very file that was checked to be under a root."""

from __future__ import annotations

import pytest

from repoos_agent.errors import RepoosError
from repoos_agent.mcp.roots import AllowedRoots, OutsideRootsError
from repoos_agent.mcp.server import TargetResolver

KERNEL = """
def {name}(A):
    for i in range(A.shape[0]):
        A[i] = A[i] + 1.0
"""


@pytest.fixture
def layout(tmp_path, monkeypatch):
    home, cwd, outside = tmp_path / "home", tmp_path / "cwd", tmp_path / "outside"
    for directory in (home / "proj", cwd / "~" / "proj", outside):
        directory.mkdir(parents=True)
    (home / "proj" / "k.py").write_text(KERNEL.format(name="inside"))
    (cwd / "~" / "proj" / "k.py").write_text(KERNEL.format(name="outside_secret"))  # a literal `~` directory
    (outside / "secret.py").write_text(KERNEL.format(name="outside_secret"))
    (home / "proj" / "link.py").symlink_to(outside / "secret.py")
    (home / "proj" / "notes.txt").write_text("not python")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    return TargetResolver(AllowedRoots([home / "proj"]))


def test_a_tilde_path_opens_the_checked_file(layout):
    assert layout.resolve("~/proj/k.py:inside").kernel.name == "inside"
    with pytest.raises(RepoosError, match="outside_secret"):
        layout.resolve("~/proj/k.py:outside_secret")  # not the look-alike under the working directory


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("~/proj/link.py:outside_secret", "outside the directories"),  # a symlink out of the root
        ("~/proj/notes.txt:f", "not a Python file"),
        ("~/proj/\0.py:f", "not a readable path"),
    ],
)
def test_escapes_are_refused(layout, text, reason):
    with pytest.raises(OutsideRootsError, match=reason):
        layout.resolve(text)
