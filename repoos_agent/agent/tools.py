"""The engine's operations as tools: one registry for our agent's `--mode tools` and for the MCP server.

Each tool is a typed function over a target with a docstring written for the model that
calls it and a JSON schema of its arguments. A user's (or model's) mistake comes back
as a result with an `error` field, never as an exception in the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from repoos_agent.agent.llm.base import ToolSpec
from repoos_agent.codegen.c import generate_c
from repoos_agent.codegen.loopnest import build_loop_nest
from repoos_agent.codegen.mlir import generate_mlir
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import Evaluation, evaluate_schedule
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.model.kernel import isl_lock
from repoos_agent.model.signature import Signature
from repoos_agent.target import Target

CODE_LIMIT = 6000
"""Characters of generated code a tool returns: enough to read the loops, not to flood a context."""


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable[[dict], dict]


def _schedule_parameter(description: str) -> dict:
    return {"type": "object", "properties": {"schedule": {"type": "string", "description": description}}, "required": ["schedule"]}


def agent_tools(target: Target, size: str | None, compiler: str, on_evaluation: Callable[[str, Evaluation], None]) -> list[Tool]:
    """The tools bound to one target; `on_evaluation` sees every measured schedule (the leaderboard)."""
    kernel = target.kernel

    def run_analyze(_: dict) -> dict:
        return asdict(analyze(kernel))

    def run_check(arguments: dict) -> dict:
        verdict = prove_legal(kernel, str(arguments["schedule"]))
        return {"verdict": verdict.verdict, "feedback": verdict.feedback, "parallel_loops": list(verdict.parallel_loops)}

    def run_evaluate(arguments: dict) -> dict:
        schedule = str(arguments["schedule"])
        evaluation = evaluate_schedule(target, schedule, size, compiler=compiler)
        on_evaluation(schedule, evaluation)
        keys = ("verdict", "correct", "speedup", "spread", "verified", "feedback")
        return {key: getattr(evaluation, key) for key in keys}

    def run_show(arguments: dict) -> dict:
        verdict = prove_legal(kernel, str(arguments.get("schedule", "")))
        if not verdict.legal:
            return {"error": verdict.feedback}
        signature = Signature.of_values(kernel, target.inputs(size))
        with isl_lock(kernel):
            if arguments.get("language") == "mlir":
                code = generate_mlir(kernel, signature, build_loop_nest(kernel, verdict.lowered)).text
            else:
                code = generate_c(kernel, signature, verdict.lowered).text
        return {"code": code[:CODE_LIMIT], "truncated": len(code) > CODE_LIMIT}

    return [
        Tool(
            ToolSpec(
                "analyze",
                "Dependences of the kernel and, per loop, whether it carries one and could run parallel or vectorized.",
                {"type": "object", "properties": {}},
            ),
            run_analyze,
        ),
        Tool(
            ToolSpec(
                "check_legality",
                "Prove a schedule legal without building it (milliseconds): verdict, and feedback naming any broken dependence.",
                _schedule_parameter("schedule text, e.g. 'interchange(j, k); parallelize(i)'"),
            ),
            run_check,
        ),
        Tool(
            ToolSpec(
                "evaluate",
                "Prove, verify with Z3, build, check outputs and time a schedule against the baseline: speedup and spread.",
                _schedule_parameter("schedule text to measure"),
            ),
            run_evaluate,
        ),
        Tool(
            ToolSpec(
                "show_code",
                "The generated C (or MLIR) of a legal schedule.",
                {
                    "type": "object",
                    "properties": {"schedule": {"type": "string"}, "language": {"type": "string", "enum": ["c", "mlir"]}},
                },
            ),
            run_show,
        ),
    ]


def call_tool(tools: list[Tool], name: str, arguments: dict) -> dict:
    """Run the named tool; unknown names, missing arguments and engine errors come back as `error`."""
    tool = next((t for t in tools if t.spec.name == name), None)
    if tool is None:
        return {"error": f"unknown tool `{name}`; tools are {', '.join(t.spec.name for t in tools)}"}
    if "__unparsable__" in arguments:
        return {"error": f"the arguments are not JSON: {arguments['__unparsable__']!r}"}
    missing = [key for key in tool.spec.parameters.get("required", []) if key not in arguments]
    if missing:
        return {"error": f"`{name}` needs {', '.join(missing)}"}
    try:
        return tool.run(arguments)
    except RepoosError as error:
        return {"error": str(error)}
