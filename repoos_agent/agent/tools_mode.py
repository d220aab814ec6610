"""`--mode tools`: the model drives the search itself through native function calling.

It calls analyze, tries schedules with check_legality and evaluate, and stops when it
answers without a tool call or its budget of calls is spent. Every `evaluate` lands on
the same leaderboard and event stream as the dialogue mode's proposals.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from repoos_agent.agent.dialogue import LLMProposer
from repoos_agent.agent.llm.base import LLMError, Message
from repoos_agent.agent.tools import Tool, call_tool
from repoos_agent.schedule.primitives import catalog_lines

TOOLS_SYSTEM_PROMPT = (
    """\
You optimize a Python loop kernel by choosing a loop schedule, using tools: `analyze` shows
dependences and parallel loops, `check_legality` proves a schedule (cheap), `evaluate`
builds and times it against the native baseline (costly), `show_code` prints the code.
The schedule language, primitives separated by `;` (qualify shared loop names with a statement, `S1.j`):
"""
    + catalog_lines()
    + """\
Check legality before you evaluate. When you are done, answer with a short summary and no tool call.
Machine: {machine}.
"""
)
"""The tools mode's first message; its catalog of primitives comes from the registry (`schedule.primitives`)."""


def run_tools_dialogue(proposer: LLMProposer, tools: list[Tool], budget: int, on_call: Callable[[str, dict], None]) -> None:
    """Let the model call tools until it stops or `budget` calls are spent; tokens accrue on the proposer."""
    messages = [
        Message("system", TOOLS_SYSTEM_PROMPT.format(machine=proposer.machine.describe())),
        Message("user", proposer.kernel_prompt()),
    ]
    specs = [tool.spec for tool in tools]
    calls_made = 0
    while calls_made < budget:
        try:
            turn = proposer.backend.complete_with_tools(messages, specs)
        except LLMError:
            return
        proposer.tokens["input"] += turn.input_tokens
        proposer.tokens["output"] += turn.output_tokens
        if not turn.calls:
            return
        messages.append(Message("assistant", turn.text, tool_calls=turn.calls))
        for call in turn.calls:
            calls_made += 1
            result = call_tool(tools, call.name, call.arguments) if calls_made <= budget else {"error": "tool budget spent"}
            on_call(call.name, call.arguments)
            messages.append(Message("tool", json.dumps(result, default=str), tool_call_id=call.id, name=call.name))
