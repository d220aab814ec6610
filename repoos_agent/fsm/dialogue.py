"""A language model proposing fsm variants: it is shown the function and its rewrite menu, and answers with variants
in the proposal language, never with code.

The reply is decoded, where the server can, under the function's own grammar (`proposals.gbnf`, or
`proposals.json_schema` for structured outputs), so a constrained model can only write steps that apply. The grammar
form wraps the lines in one `<schedule>` block, the shape by which the backends' constrained decoding tells a reply
that honoured a grammar from one that ignored it. Each line is read by `read_proposals`: a line that does not parse
or names a rewrite that does not apply becomes feedback, sent back to the model in the next turn (at most `TURNS`),
and kept as a `malformed` or `inapplicable` entrant, so the race table shows what the model got wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from repoos_agent.agent.llm.base import ChatBackend, LLMError, Message, ReplyConstraint
from repoos_agent.fsm import ir
from repoos_agent.fsm.heuristic import LIMIT
from repoos_agent.fsm.proposals import JOIN, MAX_STEPS, Proposal, choices, gbnf, json_schema, menu_text, read_proposals

TURNS = 2
"""Replies asked for: the first, and one more when the engine refused some of its lines."""

SYSTEM_PROMPT = f"""\
You speed up a branchy byte-level Python function (a checksum, decoder, validator, parser). You never write code:
you pick rewrites from the menu the engine shows you, and the engine applies them to its compiled form, checks each
variant equal to the Python original on every input it tries, and races the survivors against the compiled baseline.

Write each variant on its own line: rewrites from the menu joined by `{JOIN}`, at most {MAX_STEPS}, parameters chosen
among those the menu offers. Put all the lines in one <schedule>...</schedule> block, or, where the server decodes
JSON, answer {{"variants": [["unroll(n=4)"], ["slicing(k=8)", "unroll(n=2)"]]}}. Propose a few distinct variants,
the most promising first: a table or a fast path changes the work per byte, unrolling or branch removal trims what
remains.
"""

_BLOCK = re.compile(r"<schedule>(.*?)</schedule>", re.S)


@dataclass
class FsmDialogue:
    """One model's proposals for one function; `messages` is the conversation, kept for a reader or a test."""

    backend: ChatBackend
    function: ir.Function
    source: str
    constrain: bool = True
    messages: list[Message] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})

    def proposals(self) -> list[Proposal]:
        """The variants the model proposes over at most `TURNS` replies, each read by the proposal language; a model
        that cannot be reached raises `LLMError` before its first reply, and ends the dialogue after it."""
        if not choices(self.function):
            return []  # nothing applies: the baseline races alone, and no model is asked
        self.messages = [Message("system", SYSTEM_PROMPT), Message("user", self.function_prompt())]
        kept: dict[str, Proposal] = {}
        for turn in range(TURNS):
            try:
                completion = self.backend.complete(self.messages, self.constraint())
            except LLMError:
                if turn == 0:
                    raise
                break
            self.tokens["input"] += completion.input_tokens
            self.tokens["output"] += completion.output_tokens
            self.messages.append(Message("assistant", completion.text))
            lines = reply_lines(completion.text)
            if isinstance(lines, str):
                refused = [lines]
            else:
                read = read_proposals("\n".join(lines), self.function)
                for proposal in read:
                    kept.setdefault(proposal.label, proposal)
                refused = [proposal.feedback for proposal in read if proposal.feedback]
            if not refused:
                break
            self.messages.append(Message("user", refusals_prompt(refused)))
        return list(kept.values())[:LIMIT]

    def constraint(self) -> ReplyConstraint | None:
        """The function's grammar, in the forms servers take; None when replies are free text."""
        if not self.constrain:
            return None
        lines = gbnf(self.function).replace("root ::=", "variants ::=", 1)
        return ReplyConstraint(
            gbnf=f'root ::= "<schedule>\\n" variants "\\n</schedule>"\n{lines}', json_schema=json_schema(self.function)
        )

    def function_prompt(self) -> str:
        return f"Function `{self.function.name}`:\n```python\n{self.source}\n```\n{menu_text(self.function)}\nPropose variants."


def reply_lines(text: str) -> list[str] | str:
    """The variant lines of a reply (a JSON object under the schema, or `<schedule>` blocks), or why there are none."""
    if text.lstrip().startswith("{"):
        try:
            variants = json.loads(text).get("variants")
        except (json.JSONDecodeError, AttributeError):
            return f"unparsable JSON reply: {' '.join(text.split())[:80]}"
        if not isinstance(variants, list) or not all(isinstance(v, list) and v for v in variants):
            return 'a JSON reply is {"variants": [[step, ...], ...]}'
        return [JOIN.join(str(step) for step in variant) for variant in variants]
    blocks = _BLOCK.findall(text)
    if not blocks:
        return f"reply without a <schedule> block: {' '.join(text.split())[:80]}"
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def refusals_prompt(refused: Sequence[str]) -> str:
    """The engine's word on the lines it could not take, and the request for new ones."""
    listing = "\n".join(f"- {reason}" for reason in refused)
    return f"The engine refused these:\n{listing}\nPropose variants again, from the menu only."
