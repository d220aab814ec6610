"""The propose-and-feedback dialogue with a language model.

The model sees the schedule language, the verdict vocabulary and the machine (system
prompt), then the kernel with statement labels, its dependence summary and the
baseline time; it answers with reasoning and `<schedule>...</schedule>` blocks, or
`<done/>`. Each later turn carries the engine's verdict and feedback for every
candidate of the turn before. The model's text is only ever parsed as a schedule: a
reply that does not parse becomes `invalid` feedback, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from repoos_agent.agent.heuristic import Idea, Outcome
from repoos_agent.agent.llm.base import ChatBackend, LLMError, Message
from repoos_agent.agent.machine import Machine, this_machine
from repoos_agent.legality import analyze
from repoos_agent.model.kernel import Kernel

_BLOCK = re.compile(r"<schedule>(.*?)</schedule>", re.S)
_DONE = re.compile(r"<done\s*/?>", re.I)

SYSTEM_PROMPT = """\
You optimize a Python loop kernel by proposing loop schedules. You never write code: a
compiler engine parses your schedule, proves it legal with exact dependence analysis,
verifies the generated loops with Z3, compiles them, checks the output against the
original and times it against the native baseline (already gcc -O3 -march=native).

Schedule language: primitives separated by `;`. Loops are named by their Python loop
variable; where several loops share a name, qualify it with a statement: `S1.j`.
  interchange(i, j)          swap two loops of a perfect band
  tile(i, j, 32, 32)         tile 1-3 adjacent loops; tile loops are named i_t, j_t (j_t2 if tiled twice)
  skew(i, j, f)              j += f*i
  reverse(i)                 run a loop backwards
  shift(S1.i, d)             offset one statement inside a loop
  fuse(S0, S1, depth)        move S1 into S0's outer `depth` loops
  distribute(S0, S1)         split the innermost loop S0 and S1 share
  parallelize(i)             OpenMP parallel loop (must carry no dependence)
  vectorize(j, width)        SIMD on an innermost loop
  unroll(k, factor)          exact unrolling
  promote(k)                 keep the elements k's body updates in registers across k
                             (register tiling: the loops inside k must be a tile of the target)
  blas(S1)                   run the product whose update is S1 (T += A*B after T = 0) as one
                             OpenBLAS gemm/gemv call; no other primitive may touch its loops
Example: distribute(S0, S1); interchange(S1.j, S1.k); parallelize(S0.i)
Register tiling of C[i][j] += A[i][k]*B[k][j] (loops i, k, j):
  tile(i, k, j, 6, 128, 32); interchange(i_t, k_t); interchange(i, k); parallelize(i_t); promote(k)

Verdicts you will see: legal (with speedup and spread), invalid (did not parse or apply;
the reason names the token), illegal (breaks the named dependence; often with a
suggestion), reassociation (reorders a floating-point reduction), verification_failed,
compile_error, runtime_error, incorrect, timeout.

Each turn: think briefly, then give up to {candidates} schedules, each in its own
<schedule>...</schedule> block. Combine what worked, revise what failed, resize tiles,
or answer <done/> when you believe the best is found.
Machine: {machine}.
"""


@dataclass
class LLMProposer:
    """One dialogue with one model; `propose` is one turn."""

    kernel: Kernel
    backend: ChatBackend
    baseline_s: float | None = None
    machine: Machine = field(default_factory=this_machine)
    extents: Mapping[str, int] = field(default_factory=dict)  # parameter values of the measured size, if known
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    done: bool = False

    def __post_init__(self) -> None:
        self.name = self.backend.name
        self.error: str | None = None  # why the model stopped answering, if it did
        self.messages: list[Message] = []
        self.reported = 0

    def propose(self, history: list[Outcome], count: int, others: list[Idea] | None = None) -> list[Idea]:
        """One turn; `others` are proposals of reference agents this model aggregates (Mixture-of-Agents)."""
        if self.done:
            return []
        if not self.messages:
            system = SYSTEM_PROMPT.format(candidates=count, machine=self.machine.describe())
            self.messages = [Message("system", system), Message("user", self.kernel_prompt())]
        else:
            self.messages.append(Message("user", feedback_prompt(history[self.reported :])))
        if others:
            listing = "\n".join(f"- {idea.agent}: `{idea.schedule}`" for idea in others)
            self.messages[-1] = Message(
                "user", f"{self.messages[-1].content}\nOther agents propose (they will be measured too):\n{listing}"
            )
        self.reported = len(history)
        try:
            completion = self.backend.complete(self.messages)
        except LLMError as error:
            self.done = True
            self.error = str(error)
            return []
        self.tokens["input"] += completion.input_tokens
        self.tokens["output"] += completion.output_tokens
        self.messages.append(Message("assistant", completion.text))
        blocks = [b.strip() for b in _BLOCK.findall(completion.text)]
        if not blocks:
            if _DONE.search(completion.text):
                self.done = True
                return []
            excerpt = " ".join(completion.text.split())[:80]
            return [Idea(f"reply without a <schedule> block: {excerpt}", 0.0, "unparsable reply", self.name)]
        return [Idea(block, 0.0, "model", self.name) for block in blocks[:count]]

    def kernel_prompt(self) -> str:
        analysis = analyze(self.kernel)
        statements = "\n".join(
            f"  {s.label} (line {s.line}, loops {', '.join(s.loops) or 'none'}): {s.text}" for s in analysis.statements
        )
        loops = "\n".join(
            f"  {loop.name}: "
            + ("parallel" if loop.parallelizable else f"carries {len(loop.carries)} dependence(s)")
            + (", vectorizable" if loop.vectorizable else "")
            for loop in analysis.loops
        )
        baseline = f"{self.baseline_s * 1000:.3f} ms" if self.baseline_s else "measured with each candidate"
        sizes = ", ".join(f"{name} = {value}" for name, value in self.extents.items()) or "not known in advance"
        return (
            f"Kernel `{self.kernel.name}`:\n```python\n{self.kernel.source}\n```\n"
            f"Statements:\n{statements}\nDependences:\n" + "\n".join(f"  {d}" for d in analysis.dependences) + "\n"
            f"Loops:\n{loops}\nSizes measured: {sizes} (tile and register-block sizes that divide the loops leave no "
            f"ragged edges, which run untransformed).\nBaseline time: {baseline}.\nPropose schedules."
        )


def feedback_prompt(outcomes: list[Outcome]) -> str:
    """What the engine said about each candidate of the last turn, in the order proposed."""
    lines = ["Results of your last schedules:"]
    for outcome in outcomes:
        speed = f", {outcome.speedup:.2f}x" if outcome.speedup else ""
        lines.append(f"- `{outcome.schedule}`: {outcome.verdict}{speed}. {outcome.feedback}".rstrip())
    lines.append("Propose improved schedules, or <done/>.")
    return "\n".join(lines)
