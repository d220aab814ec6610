"""The engine calls the monitor makes besides the search: a row's generated code, and building the winner.

Both go through the engine's own functions (the agent's `show_code` tool, `build_native`),
bound to one target and search configuration; the app receives them as plain callables.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.agent.events import Event
from repoos_agent.agent.search import SearchConfig
from repoos_agent.agent.tools import agent_tools, call_tool
from repoos_agent.backends import build_native
from repoos_agent.errors import RepoosError
from repoos_agent.legality import prove_legal
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target


@dataclass(frozen=True)
class TargetActions:
    target: Target
    config: SearchConfig

    def code(self, schedule: str, language: str) -> str:
        """The generated C or MLIR of `schedule`, as the agent's `show_code` tool returns it."""
        tools = agent_tools(self.target, self.config.size, self.config.compiler, lambda *_: None)
        shown = call_tool(tools, "show_code", {"schedule": schedule, "language": language})
        if "error" in shown:
            raise RepoosError(str(shown["error"]))
        note = f"\n// … cut at {len(shown['code'])} characters (`repoos show` prints it all)\n" if shown["truncated"] else ""
        return str(shown["code"]) + note

    def build_best(self, best: Event) -> str:
        """Build the winner's native library into the kernel cache (keyed by schedule); says where it is."""
        schedule = best.schedule or ""
        proof = prove_legal(self.target.kernel, schedule, self.config.allow_reassociation)
        if not proof.legal:
            raise RepoosError(f"`{schedule}` is not legal here: {proof.feedback.splitlines()[0]}")
        values = self.target.inputs(self.config.size, self.config.seed)
        native = build_native(
            self.target.kernel, Signature.of_values(self.target.kernel, values), proof.lowered, backend=self.config.compiler
        )
        return f"built `{schedule}` ({self.config.compiler}) into the kernel cache: {native.library}"
