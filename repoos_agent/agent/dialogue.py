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
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from repoos_agent.agent.heuristic import Idea, Outcome
from repoos_agent.agent.llm.base import ChatBackend, LLMError, Message, ReplyConstraint
from repoos_agent.agent.machine import Machine, this_machine
from repoos_agent.agent.prompt_examples import examples_for
from repoos_agent.errors import RepoosError
from repoos_agent.legality import analyze, prove_legal
from repoos_agent.model.kernel import Kernel
from repoos_agent.schedule import ScheduleError
from repoos_agent.schedule.grammar import KernelGrammar, kernel_grammar, schedules_from_json
from repoos_agent.schedule.primitives import catalog_lines

_BLOCK = re.compile(r"<schedule>(.*?)</schedule>", re.S)
_DONE = re.compile(r"<done\s*/?>", re.I)

SYSTEM_PROMPT = (
    """\
You optimize a Python loop kernel by proposing loop schedules. You never write code: a
compiler engine parses your schedule, proves it legal with exact dependence analysis,
verifies the generated loops with Z3, compiles them, checks the output against the
original and times it against the native baseline (already gcc -O3 -march=native).

Schedule language: primitives separated by `;`. Loops are named by their Python loop
variable; where several loops share a name, qualify it with a statement: `S1.j`.
"""
    + catalog_lines()
    + """\
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
)
"""The first message of a dialogue; its catalog of primitives comes from the registry (`schedule.primitives`)."""

CONSTRAINED_NOTE = """Your replies are constrained to this kernel's schedules: write only <schedule>...</schedule>
blocks, or, where the server decodes JSON, {"schedules": [[{"primitive": "tile", "names": "i, j",
"numbers": [32, 32]}, {"primitive": "parallelize", "names": "i_t"}]]}.
"""

ONE_PRIMITIVE_NOTE = """Work one primitive at a time: each <schedule> block holds ONE primitive, which the engine appends
to the best legal schedule so far (shown with each turn) and measures.
"""


@dataclass(frozen=True)
class PromptOptions:
    """What the prompts carry; `benchmarks/llm_study.py --study prompt` measures each part on a real model."""

    dependences: bool = True  # the kernel's dependence summary and which loops are parallel
    examples: bool = False  # legal schedules of a similar bundled kernel, as few-shot examples
    feedback: str = "full"  # "full": verdict, speedup and the engine's reason; "verdict": verdict and speedup only
    one_primitive: bool = False  # one primitive a turn, appended to the best schedule so far, instead of whole schedules

    @staticmethod
    def parse(spec: str) -> PromptOptions:
        """`--prompt`'s comma-separated words, e.g. `no-dependences,examples,one-primitive`; "" is the default."""
        options = PromptOptions()
        words = {
            "dependences": {"dependences": True},
            "no-dependences": {"dependences": False},
            "examples": {"examples": True},
            "no-examples": {"examples": False},
            "full-feedback": {"feedback": "full"},
            "verdict-feedback": {"feedback": "verdict"},
            "one-primitive": {"one_primitive": True},
            "whole-schedules": {"one_primitive": False},
        }
        for word in (w.strip() for w in spec.split(",") if w.strip()):
            if word not in words:
                raise RepoosError(f"--prompt: unknown word `{word}`; choose from {', '.join(words)}")
            options = replace(options, **words[word])
        return options


@dataclass
class LLMProposer:
    """One dialogue with one model; `propose` is one turn."""

    kernel: Kernel
    backend: ChatBackend
    baseline_s: float | None = None
    machine: Machine = field(default_factory=this_machine)
    extents: Mapping[str, int] = field(default_factory=dict)  # parameter values of the measured size, if known
    constrain: bool = True  # decode replies under the kernel's schedule grammar where the server can
    allow_reassociation: bool = False  # what legality allows, for one-primitive grammars of legal uses only
    prompt: PromptOptions = field(default_factory=PromptOptions)
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    done: bool = False

    def __post_init__(self) -> None:
        self.name = self.backend.name
        self.error: str | None = None  # why the model stopped answering, if it did
        self.messages: list[Message] = []
        self.reported = 0
        self.llm_s = 0.0  # time spent waiting for the model
        self.replies = 0
        self.constraint = ""  # the form the last reply was decoded under ("" for none)
        self._legal_grammars: dict[str, KernelGrammar] = {}  # one-primitive grammars by the schedule they extend

    def propose(self, history: list[Outcome], count: int, others: list[Idea] | None = None) -> list[Idea]:
        """One turn; `others` are proposals of reference agents this model aggregates (Mixture-of-Agents)."""
        if self.done:
            return []
        base = _best_legal(history) if self.prompt.one_primitive else ""
        if not self.messages:
            system = SYSTEM_PROMPT.format(candidates=count, machine=self.machine.describe())
            system += CONSTRAINED_NOTE if self.constrain else ""
            system += ONE_PRIMITIVE_NOTE if self.prompt.one_primitive else ""
            self.messages = [Message("system", system), Message("user", self.kernel_prompt())]
        else:
            self.messages.append(Message("user", feedback_prompt(history[self.reported :], self.prompt.feedback, own=self.name)))
        if self.prompt.one_primitive:
            current = f"`{base}`" if base else "the kernel as written (no legal schedule yet)"
            self.messages[-1] = Message("user", f"{self.messages[-1].content}\nBest legal schedule so far: {current}.")
        if others:
            listing = "\n".join(f"- {idea.agent}: `{idea.schedule}`" for idea in others)
            self.messages[-1] = Message(
                "user", f"{self.messages[-1].content}\nOther agents propose (they will be measured too):\n{listing}"
            )
        self.reported = len(history)
        constraint = self._constraint(count, base)  # before the clock starts: the grammar is the engine's time
        start = time.perf_counter()
        try:
            completion = self.backend.complete(self.messages, constraint)
        except LLMError as error:
            self.done = True
            self.error = str(error)
            return []
        finally:
            self.llm_s += time.perf_counter() - start
        self.replies += 1
        self.constraint = completion.constraint
        self.tokens["input"] += completion.input_tokens
        self.tokens["output"] += completion.output_tokens
        self.messages.append(Message("assistant", completion.text))
        texts = _schedules(completion.text)
        if isinstance(texts, str):
            if _DONE.search(completion.text):
                self.done = True
                return []
            return [Idea(texts, 0.0, "unparsable reply", self.name)]
        if self.prompt.one_primitive and base:
            texts = [f"{base}; {text}" for text in texts]
        return [Idea(text, 0.0, "model", self.name) for text in texts[:count]]

    def _constraint(self, count: int, base: str) -> ReplyConstraint | None:
        """The kernel's grammar for this turn: whole schedules, or one primitive after `base`. A one-primitive
        turn's every use is a whole schedule, so the grammar offers only those the engine proves legal."""
        if not self.constrain:
            return None
        prefix = (base,) if base else ()
        try:
            if not self.prompt.one_primitive:
                grammar = kernel_grammar(self.kernel, prefix)
            elif base not in self._legal_grammars:
                grammar = self._legal_grammars[base] = kernel_grammar(self.kernel, prefix, 1, keep=self._proves_legal)
            else:
                grammar = self._legal_grammars[base]
        except ScheduleError:
            return None
        if not grammar.uses():
            return None  # nothing legal is left to add: the model may still say so, or try its luck in free text
        return ReplyConstraint(gbnf=grammar.gbnf(count), json_schema=grammar.json_schema(count))

    def _proves_legal(self, schedule: str) -> bool:
        return prove_legal(self.kernel, schedule, self.allow_reassociation, explain=False).legal

    def kernel_prompt(self) -> str:
        analysis = analyze(self.kernel)
        statements = "\n".join(
            f"  {s.label} (line {s.line}, loops {', '.join(s.loops) or 'none'}): {s.text}" for s in analysis.statements
        )
        baseline = f"{self.baseline_s * 1000:.3f} ms" if self.baseline_s else "measured with each candidate"
        sizes = ", ".join(f"{name} = {value}" for name, value in self.extents.items()) or "not known in advance"
        parts = [f"Kernel `{self.kernel.name}`:\n```python\n{self.kernel.source}\n```", f"Statements:\n{statements}"]
        if self.prompt.dependences:
            loops = "\n".join(
                f"  {loop.name}: "
                + ("parallel" if loop.parallelizable else f"carries {len(loop.carries)} dependence(s)")
                + (", vectorizable" if loop.vectorizable else "")
                for loop in analysis.loops
            )
            parts += ["Dependences:\n" + "\n".join(f"  {d}" for d in analysis.dependences), f"Loops:\n{loops}"]
        if self.prompt.examples:
            parts.append("Legal schedules the engine found for a similar kernel:\n" + examples_for(self.kernel))
        parts.append(
            f"Sizes measured: {sizes} (tile and register-block sizes that divide the loops leave no "
            f"ragged edges, which run untransformed).\nBaseline time: {baseline}.\nPropose schedules."
        )
        return "\n".join(parts)


def _schedules(text: str) -> list[str] | str:
    """The schedule texts of a reply (blocks, or a JSON reply under a schema), or why there are none."""
    if text.lstrip().startswith("{"):
        try:
            texts = [t for t in schedules_from_json(text) if t]
        except ScheduleError as error:
            return f"unparsable JSON reply: {error.reason}"
        return texts or "JSON reply without schedules"
    blocks = [b.strip() for b in _BLOCK.findall(text)]
    return blocks or f"reply without a <schedule> block: {' '.join(text.split())[:80]}"


def _best_legal(history: list[Outcome]) -> str:
    """The fastest legal schedule measured so far, "" if none: what one-primitive turns extend."""
    legal = [o for o in history if o.verdict == "legal" and o.speedup]
    return max(legal, key=lambda o: o.speedup or 0.0).schedule if legal else ""


def feedback_prompt(outcomes: list[Outcome], detail: str = "full", own: str | None = None) -> str:
    """What the engine said about each candidate of the last turn, in the order proposed; `detail="verdict"`
    leaves out the engine's reasons (the ablation `PromptOptions.feedback` measures).

    With `own` (the model's name in a mixture), the schedules other agents proposed come down to one line: how
    many were measured and the fastest legal one, which the model can build on. Listed with their reasons, the
    heuristic's four candidates made each turn's prompt about 1,100 tokens, 9 s of prompt evaluation at 120
    tokens/s; listed with verdicts alone, still about 250."""
    mine = [o for o in outcomes if own is None or o.agent in ("", own)]
    theirs = [o for o in outcomes if own is not None and o.agent not in ("", own)]
    lines = ["Results of your last schedules:"]
    for outcome in mine:
        speed = f", {outcome.speedup:.2f}x" if outcome.speedup else ""
        reason = f" {first_reason(outcome.feedback)}" if detail == "full" else ""
        lines.append(f"- `{outcome.schedule}`: {outcome.verdict}{speed}.{reason}".rstrip())
    if theirs:
        legal = [o for o in theirs if o.verdict == "legal" and o.speedup]
        fastest = max(legal, key=lambda o: o.speedup or 0.0) if legal else None
        best = f"; the fastest: `{fastest.schedule}` (by {fastest.agent}), {fastest.speedup:.2f}x" if fastest else ""
        lines.append(f"Other agents' schedules: {len(theirs)} measured, {len(legal)} legal{best}.")
    lines.append("Propose improved schedules, or <done/>.")
    return "\n".join(lines)


LEGAL_PREAMBLE = re.compile(r"^legal(?: (\([^)]*\)))?: every dependence is preserved\. ")
MEASURED = re.compile(
    r" Measured: (?:[0-9.]+x over the baseline \([^)]*\), outputs equal within tolerance"
    r"|stopped after two runs: about [0-9.]+x, far behind the best so far)\."
)
"""The measurement's sentence, timed in full or stopped early: the line gives the speedup already."""


def first_reason(feedback: str) -> str:
    """What a model acts on in the engine's feedback, in few tokens (each costs about 10 ms to evaluate on a CPU).

    An illegal verdict: its first broken dependence (with its pair of instances) and the suggestion; the others
    counted. The engine explains up to three per verdict, one per kind (flow, anti, output) of the same loop,
    usually alike: 300 tokens. A legal one: what its schedule opened up (the loops now free, private scalars,
    temporaries shrunk, sums split), without the words that repeat the verdict and the speedup the line already
    gives; those were 45 of about 100 tokens per legal candidate."""
    if feedback.startswith("legal"):
        note = LEGAL_PREAMBLE.sub(lambda m: f"{m.group(1)} " if m.group(1) else "", feedback, count=1)
        return MEASURED.sub("", note, count=1)
    lines = feedback.splitlines()
    broken = [line for line in lines if line.startswith("illegal: ")]
    if len(broken) < 2:
        return feedback
    kept = [broken[0], f"({len(broken) - 1} more dependence(s) broken too)"]
    return "\n".join(kept + [line for line in lines if line.startswith("suggestion: ")])
