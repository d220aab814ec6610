"""Our agent's `--mode tools`: the engine's operations bound to one target, as function-calling tools.

The operations and their docstrings live in `repoos_agent.agent.operations` (the MCP
server serves the same functions). Here each becomes a `ToolSpec` whose JSON schema is
derived from the operation's signature, minus the target and whatever the search fixes
itself (size, compiler). A model's mistake (bad arguments, an unknown tool, a schedule
that does not parse) comes back as a result with an `error` field, never as an exception.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from repoos_agent.agent.llm.base import ToolSpec
from repoos_agent.agent.operations import (
    EvaluationReport,
    analyze_kernel,
    check_legality,
    evaluate,
    evaluate_measured,
    report_evaluation,
    show_code,
)
from repoos_agent.errors import RepoosError
from repoos_agent.evaluate import Evaluation
from repoos_agent.schedule.grammar import kernel_grammar
from repoos_agent.target import Target


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable[[dict], dict]


def arguments_model(operation: Callable[..., object], exposed: tuple[str, ...]) -> type[BaseModel]:
    """A pydantic model of the `exposed` parameters of `operation`: their types, defaults and descriptions."""
    parameters = inspect.signature(operation, eval_str=True).parameters
    fields: dict[str, Any] = {
        name: (parameters[name].annotation, parameters[name].default)
        if parameters[name].default is not inspect.Parameter.empty
        else parameters[name].annotation
        for name in exposed
    }
    return create_model(f"{operation.__name__}_arguments", **fields)


def bind(
    operation: Callable[..., object],
    target: Target,
    name: str | None = None,
    call: Callable[..., object] | None = None,
    **fixed: object,
) -> Tool:
    """`operation` on `target` as a tool; `fixed` arguments are the caller's, the rest the model's.

    `call` runs in the operation's place with the same arguments (the search's evaluate also records)."""
    parameters = list(inspect.signature(operation).parameters)
    exposed = tuple(p for p in parameters[1:] if p not in fixed)
    model = arguments_model(operation, exposed)
    schema = model.model_json_schema()
    schema.pop("title", None)

    def run(arguments: dict) -> dict:
        try:
            validated = model.model_validate(arguments)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors())
            return {"error": f"`{spec.name}` arguments: {problems}"}
        return asdict((call or operation)(target, **dict(validated), **fixed))

    spec = ToolSpec(name or operation.__name__, inspect.getdoc(operation) or "", schema)
    return Tool(spec, run)


def strict_spec(spec: ToolSpec, schedule_pattern: str) -> ToolSpec:
    """`spec` in strict form: every argument required, no others, and a `schedule` argument held to the kernel's
    grammar (`KernelGrammar.pattern`), so a server that decodes strictly cannot call a tool with a loop the kernel lacks."""
    parameters = dict(spec.parameters)
    properties = {name: dict(schema) for name, schema in parameters.get("properties", {}).items()}
    if "schedule" in properties:
        properties["schedule"]["pattern"] = schedule_pattern
    parameters.update(properties=properties, required=list(properties), additionalProperties=False)
    return replace(spec, parameters=parameters, strict=True)


def agent_tools(
    target: Target,
    size: str | None,
    compiler: str,
    on_evaluation: Callable[[str, Evaluation], None],
    measure: Callable[[str], Evaluation] | None = None,
    constrain: bool = False,
) -> list[Tool]:
    """The tools bound to one target; `on_evaluation` sees every measured schedule (the leaderboard), and
    `measure`, when given, is how `evaluate` measures (the search's own settings). `constrain` gives strict
    parameters whose schedules follow the kernel's grammar."""

    def evaluate_and_record(target: Target, schedule: str, size: str | None, compiler: str) -> EvaluationReport:
        evaluation = evaluate_measured(target, schedule, size, compiler, measure)
        on_evaluation(schedule, evaluation)
        return report_evaluation(evaluation)

    tools = [
        bind(analyze_kernel, target, name="analyze"),
        bind(check_legality, target),
        bind(evaluate, target, call=evaluate_and_record, size=size, compiler=compiler),
        bind(show_code, target),
    ]
    if not constrain:
        return tools
    pattern = kernel_grammar(target.kernel).pattern()
    return [replace(tool, spec=strict_spec(tool.spec, pattern)) for tool in tools]


def call_tool(tools: list[Tool], name: str, arguments: dict) -> dict:
    """Run the named tool; unknown names, bad arguments and engine errors come back as `error`."""
    tool = next((t for t in tools if t.spec.name == name), None)
    if tool is None:
        return {"error": f"unknown tool `{name}`; tools are {', '.join(t.spec.name for t in tools)}"}
    if "__unparsable__" in arguments:
        return {"error": f"the arguments are not JSON: {arguments['__unparsable__']!r}"}
    try:
        return tool.run(arguments)
    except RepoosError as error:
        return {"error": str(error)}
