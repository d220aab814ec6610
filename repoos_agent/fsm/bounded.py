"""The bounded check: a variant's IR against the baseline's on every input up to a stated length, with Z3.

Both functions are executed symbolically over the same inputs: each byte of a sequence argument an 8-bit (or its
dtype's width) bit-vector, each int argument a 64-bit one, for each length 0, 1, ... L of the sequences in turn.
Ints are 64-bit bit-vectors because that is what the C code computes and `ranges` proves it equal to Python's.
Control flow is merged rather than forked: each statement updates the state under the condition that execution
reaches it, so a branch per bit of a CRC costs one `If` term, not a doubling of paths. Where the inputs' lengths
fix the control flow (most loops), values stay Python ints and nothing symbolic is built for them.

What is compared is what the caller sees: the return value (or the output buffer), every written argument after
the call, and the raised exception (type and message, not the code a variant may renumber). A call that leaves
for the Python original (an index out of range, a guarded counter past its bound) is modelled as such: a variant
that leaves there is right by construction, and a variant that finishes where the baseline leaves counts as a
difference, since what the original does there is not modelled. A loop that may run more often than unrolled
makes the check "not applicable" rather than "proved": the model would be incomplete.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import z3

from repoos_agent.fsm import carryless, ir
from repoos_agent.fsm.differential import literals
from repoos_agent.fsm.lower import FsmRefusal
from repoos_agent.fsm.nested import rebuild
from repoos_agent.fsm.ranges import ARGUMENT, GUARD, Widths, check_widths, elements

PROVED, COUNTEREXAMPLE, NOT_APPLICABLE = "proved", "counterexample", "not applicable"
BUDGET_S = 3.0
"""The time the check may spend on one variant: lengths are checked in turn until it is spent."""
MAX_LENGTH = 64
"""The longest inputs the check tries when the budget allows."""
STEPS = 40_000
"""The most statements one symbolic execution may unroll: past it the length is left unchecked."""
WIDTHS = {"uint8": (8, False), "int8": (8, True), "int32": (32, True), "int64": (64, True), "uint32": (32, False)}
MASK = (1 << 64) - 1
MAX_CODE_POINT = 0x10FFFF
OUTPUTS = (ir.BUFFER, ir.LIST)
"""What a function returns when it returns its local output (a bytearray's bytes, a list's ints)."""

Value = int | z3.BitVecRef
Truth = bool | z3.BoolRef


@dataclass(frozen=True)
class Bounded:
    """The check's verdict: `proved` for every input up to `length` (for every input at all where the function
    takes no sequence), a `counterexample` (the arguments, shortest sequences first), or `not applicable` with the
    reason."""

    verdict: str
    length: int
    counterexample: tuple[object, ...] | None = None
    reason: str = ""
    every_input: bool = False

    def describe(self) -> str:
        if self.every_input:
            return f"proved for every input ({self.reason})"
        if self.verdict == PROVED:
            return f"proved up to length {self.length}" + (f" ({self.reason})" if self.reason else "")
        if self.verdict == COUNTEREXAMPLE:
            return f"counterexample {literals(self.counterexample or ())}: {self.reason}"
        return f"not applicable: {self.reason}"


class _Unsupported(Exception):
    """What the symbolic execution cannot model at a length: the check stops before that length."""


def bounded_check(baseline: ir.Function, variant: ir.Function, max_length: int = MAX_LENGTH, budget_s: float = BUDGET_S) -> Bounded:
    """`variant` against `baseline` on every input whose sequences are at most L long, for the largest L up to
    `max_length` that fits in `budget_s` (at least length 0 must be decided, else the check does not apply)."""
    if [_signature(p) for p in baseline.parameters] != [_signature(p) for p in variant.parameters]:
        return Bounded(NOT_APPLICABLE, -1, reason="the variant takes other parameters than the baseline")
    if baseline.returns != variant.returns:
        return Bounded(NOT_APPLICABLE, -1, reason=f"the variant returns {variant.returns}, the baseline {baseline.returns}")
    if [(name, baseline.output_kind(name)) for name in baseline.results] != [
        (name, variant.output_kind(name)) for name in variant.results
    ]:
        return Bounded(NOT_APPLICABLE, -1, reason="the variant returns other outputs than the baseline")
    if (baseline.tuples, baseline.strings) != (variant.tuples, variant.strings):
        return Bounded(NOT_APPLICABLE, -1, reason="the variant builds other tuples than the baseline")
    if baseline.nested != variant.nested:
        return Bounded(NOT_APPLICABLE, -1, reason="the variant builds other nested lists than the baseline")
    unmodelled = _unmodelled(baseline.body) or _unmodelled(variant.body)
    if unmodelled is not None:
        return Bounded(NOT_APPLICABLE, -1, reason=unmodelled)
    try:
        widths = check_widths(baseline), check_widths(variant)
    except FsmRefusal as refusal:
        return Bounded(NOT_APPLICABLE, -1, reason=f"widths not proven: {refusal}")
    unmodelled = _unsigned_unmodelled(baseline, widths[0]) or _unsigned_unmodelled(variant, widths[1])
    if unmodelled is not None:
        return Bounded(NOT_APPLICABLE, -1, reason=unmodelled)
    sequences = [p for p in baseline.parameters if isinstance(p, ir.Sequence)]
    deadline = time.monotonic() + budget_s
    proved, stopped = -1, f"the budget of {budget_s:g} s ran out"
    for length in range(max_length + 1 if sequences else 1):
        try:
            found = _check_length(baseline, variant, widths, sequences, length, deadline)
        except _Unsupported as unsupported:
            stopped = str(unsupported)
            break
        if found is None:
            break
        if found.verdict != PROVED:
            return found
        proved = length
    else:
        stopped = ""
    if proved < 0:
        return Bounded(NOT_APPLICABLE, -1, reason=stopped)
    if not sequences:
        return Bounded(PROVED, proved, reason="the function takes ints only", every_input=True)
    return Bounded(PROVED, proved, reason=f"longer inputs not checked: {stopped}" if stopped else "")


def _check_length(
    baseline: ir.Function,
    variant: ir.Function,
    widths: tuple[Widths, Widths],
    sequences: list[ir.Sequence],
    length: int,
    deadline: float,
) -> Bounded | None:
    """Every combination of sequence lengths whose longest is `length`: the first difference, else `proved`."""
    for lengths in itertools.product(range(length + 1), repeat=len(sequences)):
        if sequences and max(lengths) != length:
            continue
        found = _check_lengths(baseline, variant, widths, {s.name: n for s, n in zip(sequences, lengths, strict=True)}, deadline)
        if found is None or found.verdict != PROVED:
            return found
    return Bounded(PROVED, length)


def _unmodelled(node: object) -> str | None:
    """The first IR node under `node` the check does not model, as `line N: what`, or None."""
    if isinstance(node, tuple):
        return next((found for item in node if (found := _unmodelled(item)) is not None), None)
    if not dataclasses.is_dataclass(node):
        return None
    kind = type(node)
    if kind not in MODELLED:
        return f"line {node.line}: `{kind.__name__}` is not modelled by the bounded check"  # type: ignore[attr-defined]
    operators = MODELLED[kind]
    if operators is not None and node.op not in operators:  # type: ignore[attr-defined]
        return f"line {node.line}: the operator `{node.op}` is not modelled by the bounded check"  # type: ignore[attr-defined]
    return next(
        (found for field in dataclasses.fields(node) if (found := _unmodelled(getattr(node, field.name))) is not None), None
    )


def _unsigned_unmodelled(function: ir.Function, widths: Widths) -> str | None:
    """Where a value held in `uint64_t` meets what the model does not compute as C does on it (a division, a
    remainder, `min`/`max`, a list of tuples or a nested list that returns it), as `line N: what`, or None."""
    for node in ir.nodes(function.body):
        unmodelled = isinstance(node, ir.Binary) and node.op in ("//", "%", "min", "max")
        if unmodelled and any(map(widths.held_unsigned, (node, node.left, node.right))):  # type: ignore[union-attr]
            return f"line {node.line}: `{node.op}` of a value held unsigned is not modelled by the bounded check"
    shaped = widths.unsigned_outputs & (set(function.tuples) | set(function.nested))
    if shaped:
        return f"the list `{min(shaped)}` holds values past 2**63 - 1 in tuples or nested lists: not modelled"
    return None


def _signature(parameter: ir.Sequence | str) -> tuple[str, str, str]:
    return (parameter.name, parameter.kind, parameter.dtype) if isinstance(parameter, ir.Sequence) else (parameter, "int", "")


def _check_lengths(
    baseline: ir.Function,
    variant: ir.Function,
    widths: tuple[Widths, Widths],
    lengths: dict[str, int],
    deadline: float,
) -> Bounded | None:
    """The verdict at these sequence lengths (`proved` when they agree), or None when the budget ran out."""
    inputs = _Inputs(baseline.parameters, lengths)
    keys: dict[tuple[str, str, tuple[bool, ...]], int] = {}
    first = _Execution(baseline, widths[0], inputs, keys, deadline).run()
    second = _Execution(variant, widths[1], inputs, keys, deadline).run()
    overrun = _truth(_or(_and(first.overflow, _not(first.fallback)), _and(second.overflow, _not(second.fallback))))
    differs = _and(_not(second.fallback), _or(first.fallback, _differs(first, second, baseline)))
    solver = z3.SolverFor("QF_BV")
    solver.add(*inputs.taken, z3.simplify(z3.And(z3.Not(overrun), _truth(differs))))
    answer = _solve(solver, deadline)
    if answer is None:
        return None
    if answer == z3.sat:
        arguments, model = _counterexample(solver, inputs, deadline)
        why = _Shown(model, keys, baseline).difference(first, second)
        return Bounded(COUNTEREXAMPLE, max(lengths.values(), default=0), arguments, why)
    solver = z3.SolverFor("QF_BV")
    solver.add(*inputs.taken, z3.simplify(overrun))
    answer = _solve(solver, deadline)
    if answer is None:
        return None
    if answer == z3.sat:
        lines = ", ".join(map(str, sorted({line for execution in (first, second) for line in execution.overrun_lines})))
        longest = max(lengths.values(), default=0)
        raise _Unsupported(f"a loop (line {lines}) may run more than {first.unroll} times on inputs of length {longest}")
    return Bounded(PROVED, max(lengths.values(), default=0))


def _solve(solver: z3.Solver, deadline: float) -> z3.CheckSatResult | None:
    """The solver's answer, or None when the budget ran out first."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    solver.set("timeout", max(1, int(left * 1000)))
    answer = solver.check()
    return None if answer == z3.unknown else answer


def _counterexample(solver: z3.Solver, inputs: _Inputs, deadline: float) -> tuple[tuple[object, ...], z3.ModelRef]:
    """The arguments of a model, each input bit-vector pinned to 0 where the difference allows (a readable input)."""
    model = solver.model()
    for variable in inputs.variables:
        solver.push()
        solver.add(variable == 0)
        if _solve(solver, deadline) == z3.sat:
            model = solver.model()
        else:
            solver.pop()
    return inputs.values(model), model


class _Shown:
    """Outcomes read back from a model, in words."""

    def __init__(self, model: z3.ModelRef, keys: dict[tuple[str, str, tuple[bool, ...]], int], function: ir.Function) -> None:
        self.model = model
        self.raises = {key: raised for raised, key in keys.items()}
        self.returns = function.returns
        self.results = [(name, function.output_kind(name)) for name in function.results]
        self.buffer = function.buffer
        self.tuples = function.tuples
        self.nested = function.nested
        self.strings = function.strings

    def value(self, value: Value) -> int:
        return _signed(self.model.eval(_bv(value), model_completion=True).as_long())

    def outcome(self, result: _Result) -> str:
        code = self.value(result.code)
        if code:
            exception, message, characters = self.raises[code]
            values = [self.value(value) for value in result.raised_values]
            shown = [chr(value) if character else value for value, character in zip(values, characters, strict=False)]
            return f"raises {exception}" + (f": {message.format(*shown)}" if message else "")
        if self.returns in OUTPUTS:
            return f"returns {self.output(result.buffer, self.returns, self.buffer)!r}"
        if self.returns == ir.NESTED:
            streams = [self.output(result.outputs[name], ir.LIST, name) for name in self.nested]
            characters = "".join(chr(point) if 0 <= point <= 0x10FFFF else "?" for point in streams[-1])  # type: ignore[arg-type]
            return f"returns {rebuild(characters, streams[:-1])!r}"  # type: ignore[arg-type]
        if self.returns in (ir.OUTPUT, ir.TUPLE):
            return f"returns {[self.output(result.outputs[name], kind, name) for name, kind in self.results]!r}"
        return "returns None" if self.returns == "none" else f"returns {self.value(result.result)}"

    def output(self, buffer: _Buffer, kind: str, name: str | None) -> list[int] | bytearray | list[tuple[int | str, ...]]:
        cells = [self.value(cell) for cell in buffer.cells[: self.value(buffer.length)]]
        if buffer.unsigned:
            cells = [cell & MASK for cell in cells]
        shape = self.tuples.get(name)  # type: ignore[arg-type]
        if shape is not None:  # a list of tuples is flat in the model as in C: shown as the tuples it holds
            return [
                tuple(ir.tuple_element(cell, element, self.strings) for cell, element in zip(cells[start:], shape, strict=False))
                for start in range(0, len(cells), len(shape))
            ]
        return cells if kind == ir.LIST else bytearray(cell & 0xFF for cell in cells)

    def difference(self, first: _Result, second: _Result) -> str:
        if z3.is_true(self.model.eval(_truth(first.fallback), model_completion=True)):
            return "the baseline runs the Python original there and the variant does not"
        mine, theirs = self.outcome(first), self.outcome(second)
        if mine != theirs:
            return f"the baseline {mine}, the variant {theirs}"
        if self.returns == ir.NESTED:
            return f"the streams the nested lists are built from differ (the lists themselves agree: {mine})"
        return "an argument the function writes differs after the call"


def _differs(first: _Result, second: _Result, function: ir.Function) -> Truth:
    """Where the two outcomes differ: raised exception, returned value or buffer, or a written argument."""
    differs: Truth = _ne(first.code, second.code)
    for mine, theirs in itertools.zip_longest(first.raised_values, second.raised_values, fillvalue=0):
        differs = _or(differs, _and(_ne(first.code, 0), _ne(mine, theirs)))  # the values a raise's message shows
    returned: Truth = False
    if function.returns in OUTPUTS:
        returned = _buffers_differ(first.buffer, second.buffer)
    elif function.returns in (ir.OUTPUT, ir.TUPLE):
        for name in function.results:
            returned = _or(returned, _buffers_differ(first.outputs[name], second.outputs[name]))
    elif function.returns == ir.NESTED:  # the same streams build the same lists (stricter than the lists alike)
        for name in function.nested:
            returned = _or(returned, _buffers_differ(first.outputs[name], second.outputs[name]))
    elif function.returns != "none":
        returned = _ne(first.result, second.result)
    differs = _or(differs, _and(_eq(first.code, 0), returned))
    for name, cells in first.sequences.items():
        for mine, theirs in zip(cells, second.sequences[name], strict=True):
            differs = _or(differs, _ne(mine, theirs))
    return differs


def _buffers_differ(first: _Buffer, second: _Buffer) -> Truth:
    """Whether the lists differ as Python reads them back: a cell one side holds unsigned and the other signed is
    compared by the int it stands for (2**63 unsigned is not -2**63), not by its bits."""
    differs = _ne(first.length, second.length)
    for k in range(max(len(first.cells), len(second.cells))):
        if first.unsigned == second.unsigned:
            mine, theirs = (buffer.cells[k] if k < len(buffer.cells) else 0 for buffer in (first, second))
            unequal = _ne(mine, theirs)
        else:
            unequal = first.cell(k) != second.cell(k)
        differs = _or(differs, _and(_lt(k, first.length), unequal))
    return differs


class _Inputs:
    """The symbolic arguments at given lengths, shared by both executions, and read back from a model."""

    def __init__(self, parameters: tuple[ir.Sequence | str, ...], lengths: dict[str, int]) -> None:
        self.parameters = parameters
        self.variables: list[z3.BitVecRef] = []
        self.cells: dict[str, list[Value]] = {}
        self.ints: dict[str, Value] = {}
        self.taken: list[z3.BoolRef] = []
        """What the native code takes: an int within `ARGUMENT` (past it the original runs), a code point."""
        for parameter in parameters:
            if isinstance(parameter, str):
                variable = z3.BitVec(parameter, 64)
                self.variables.append(variable)
                self.ints[parameter] = variable
                self.taken += [variable >= -ARGUMENT, variable <= ARGUMENT]
                continue
            bits, signed = WIDTHS[parameter.dtype]
            cells = []
            for k in range(lengths[parameter.name]):
                variable = z3.BitVec(f"{parameter.name}[{k}]", bits)
                self.variables.append(variable)
                cells.append(_extend(variable, bits, signed))
                if parameter.kind == ir.TEXT:
                    self.taken.append(z3.ULE(variable, MAX_CODE_POINT))
            self.cells[parameter.name] = cells

    def values(self, model: z3.ModelRef) -> tuple[object, ...]:
        """The Python arguments a model stands for, typed as the function takes them."""
        arguments: list[object] = []
        for parameter in self.parameters:
            if isinstance(parameter, str):
                arguments.append(_signed(model.eval(self.ints[parameter], model_completion=True).as_long()))
                continue
            numbers = [_signed(model.eval(_bv(cell), model_completion=True).as_long()) for cell in self.cells[parameter.name]]
            if parameter.kind == ir.ARRAY:
                arguments.append(np.array(numbers, dtype=parameter.dtype))
            elif parameter.kind == ir.INTS:
                arguments.append(numbers)
            elif parameter.kind == ir.TEXT:
                arguments.append("".join(map(chr, numbers)))
            else:
                data = bytes(number & 0xFF for number in numbers)
                arguments.append(bytearray(data) if parameter.kind == ir.BYTEARRAY else data)
        return tuple(arguments)


@dataclass
class _Buffer:
    """The output `bytearray`: its length and the cells that may hold a byte (a cell past the length is unused)."""

    length: Value = 0
    cells: list[Value] = field(default_factory=list)
    unsigned: bool = False
    """Whether the cells are read back as `uint64` (a returned list `ranges` found may hold values past 2**63 - 1)."""

    def cell(self, k: int) -> z3.BitVecRef:
        """Cell `k` as the Python int it is read back as, in 65 bits (a cell past the others is 0)."""
        value = _bv(self.cells[k] if k < len(self.cells) else 0)
        return z3.ZeroExt(1, value) if self.unsigned else z3.SignExt(1, value)


@dataclass
class _Result:
    """What one execution leaves: where it fell back to the original, where a loop ran past its unrolling, the
    outcome's code (0 returned, else a raise's key), the value returned, the buffer and the mutable arguments."""

    fallback: Truth
    overflow: Truth
    code: Value
    result: Value
    buffer: _Buffer
    sequences: dict[str, list[Value]]
    raised_values: list[Value]
    unroll: int
    overrun_lines: list[int]
    outputs: dict[str, _Buffer] = field(default_factory=dict)
    """Every local output by name (`buffer` among them)."""


class _Execution:
    """One function run symbolically: every update is made under `active`, the condition that execution is there."""

    def __init__(
        self,
        function: ir.Function,
        widths: Widths,
        inputs: _Inputs,
        keys: dict[tuple[str, str, tuple[bool, ...]], int],
        deadline: float,
    ) -> None:
        self.function = function
        self.widths = widths
        self.guarded = widths.guarded
        self.keys = keys
        self.deadline = deadline
        self.active: Truth = True
        self.fallback: Truth = False
        self.overflow: Truth = False
        self.overrun_lines: list[int] = []
        self.code: Value = 0
        self.result: Value = 0
        self.raised_values: list[Value] = [0] * max((len(raised.values) for raised in function.raises), default=0)
        self.buffer = _Buffer(unsigned=function.buffer in widths.unsigned_outputs)
        self.outputs = {output.name: _Buffer(unsigned=output.name in widths.unsigned_outputs) for output in function.outputs}
        if function.buffer is not None:
            self.outputs[function.buffer] = self.buffer
        self.fault: Truth = False
        self.guard: Truth = True
        self.loops: list[list[Truth]] = []
        self.steps = 0
        self.locals: dict[str, Value] = dict(inputs.ints)
        self.fixed: dict[str, list[Value]] = {}
        self.written: dict[str, list[Value]] = {}
        self.kinds: dict[str, str] = {}
        self.mutable: list[str] = []
        for parameter in function.parameters:
            if isinstance(parameter, ir.Sequence):
                self.kinds[parameter.name] = parameter.dtype
                target = self.written if parameter.written else self.fixed
                target[parameter.name] = list(inputs.cells[parameter.name])
                if parameter.kind != ir.BYTES:
                    self.mutable.append(parameter.name)
        for name, data in function.tables.items():
            entries = data.entries if isinstance(data, ir.Table) else data  # a rewrite's table: unsigned, up to 64 bits
            self.fixed[name] = [_wrap(entry) for entry in entries]
        self.unroll = sum(len(cells) for cells in inputs.cells.values()) + 4

    def run(self) -> _Result:
        self.block(self.function.body)
        after = {name: self.cells(name)[0] for name in self.mutable}
        return _Result(
            self.fallback,
            self.overflow,
            self.code,
            self.result,
            self.buffer,
            after,
            self.raised_values,
            self.unroll,
            self.overrun_lines,
            self.outputs,
        )

    # statements

    def block(self, statements: tuple[ir.Stmt, ...]) -> None:
        for statement in statements:
            if self.active is False:
                return
            self.steps += 1
            if self.steps > STEPS:
                raise _Unsupported(f"the unrolled program passes {STEPS} statements")
            if self.steps % 256 == 0 and time.monotonic() > self.deadline:
                raise _Unsupported("the budget ran out while unrolling")
            self.statement(statement)

    def statement(self, statement: ir.Stmt) -> None:
        if isinstance(statement, ir.Assign):
            if statement.name in self.outputs:
                output = self.outputs[statement.name]
                output.length = _ite(self.active, 0, output.length)
                return
            value = self.settled(statement.value)
            kind = self.function.locals.get(statement.name, ir.INT)
            if kind in WIDTHS:  # a local of a NumPy element's type is held in that C type; any other in int64_t
                value = _narrow(value, kind)
            if statement.name in self.guarded:
                self.leave_where(_or(_lt(GUARD, value), _lt(value, -GUARD)))
            self.locals[statement.name] = _ite(self.active, value, self.locals.get(statement.name, 0))
        elif isinstance(statement, ir.Store):
            self.store(statement)
        elif isinstance(statement, ir.Append):
            value = self.settled(statement.value)
            self.guard_element(statement.sequence, value)
            kind = self.function.output_kind(statement.sequence)
            self.append(value if kind == ir.LIST else _narrow(value, "uint8"), self.outputs[statement.sequence])
        elif isinstance(statement, ir.Pop):
            output = self.outputs[statement.sequence]
            output.length = _ite(self.active, _add(output.length, -1), output.length)
        elif isinstance(statement, ir.If):
            condition = self.settled_truth(statement.condition)
            self.branches([(condition, statement.then), (_not(condition), statement.orelse)])
        elif isinstance(statement, ir.Switch):
            self.switch(statement)
        elif isinstance(statement, ir.While):
            self.loop(statement.line, lambda _: self.settled_truth(statement.condition), statement.body)
        elif isinstance(statement, ir.ForRange):
            self.for_range(statement)
        elif isinstance(statement, ir.ForEach):
            self.for_each(statement)
        elif isinstance(statement, ir.Break | ir.Continue):
            frame = self.loops[-1]
            slot = isinstance(statement, ir.Continue)
            frame[slot] = _or(frame[slot], self.active)
            self.active = False
        elif isinstance(statement, ir.Return):
            if statement.value is not None:
                value = self.settled(statement.value)
                self.result = _ite(self.active, value, self.result)
            self.active = False
        elif isinstance(statement, ir.Raise):
            values = [self.expr(value) for value in statement.values]
            self.settle()
            for k, value in enumerate(values):
                self.raised_values[k] = _ite(self.active, value, self.raised_values[k])
            key = self.keys.setdefault((statement.exception, statement.message, statement.characters), len(self.keys) + 1)
            self.code = _ite(self.active, key, self.code)
            self.active = False

    def leave_where(self, condition: Truth) -> None:
        """Where `condition` holds the call leaves for the Python original. `fallback` is final: whatever a path
        computes after it is never compared, so only a known leave stops execution, and a possible one (a guard on
        a symbolic sum) leaves `active` as it was instead of conditioning every later term on it."""
        self.fallback = _or(self.fallback, _and(self.active, condition))
        if isinstance(condition, bool):
            self.active = _and(self.active, not condition)

    def store(self, statement: ir.Store) -> None:
        cells = self.written.get(statement.sequence)
        output = self.outputs.get(statement.sequence)
        if cells is None:
            if output is None:
                raise _Unsupported(f"line {statement.line}: a store into `{statement.sequence}`, which is not written")
            cells = output.cells
        length = output.length if output is not None else len(cells)
        index = self.index(statement.index, length)
        value = self.expr(statement.value)
        self.settle()
        self.guard_element(statement.sequence, value)
        if output is None or self.function.output_kind(statement.sequence) != ir.LIST:
            value = _narrow(value, self.kinds.get(statement.sequence, "uint8"))
        for k in range(len(cells)):
            cells[k] = _ite(_and(self.active, _eq(index, k)), value, cells[k])

    def guard_element(self, sequence: str, value: Value) -> None:
        """A value stored into a list whose values C holds within `GUARD` leaves for the original past it."""
        if elements(sequence) in self.guarded:
            self.leave_where(_or(_lt(GUARD, value), _lt(value, -GUARD)))

    def append(self, value: Value, buffer: _Buffer) -> None:
        for k in range(len(buffer.cells)):
            buffer.cells[k] = _ite(_and(self.active, _eq(buffer.length, k)), value, buffer.cells[k])
        buffer.cells.append(_ite(_and(self.active, _eq(buffer.length, len(buffer.cells))), value, 0))
        buffer.length = _ite(self.active, _add(buffer.length, 1), buffer.length)

    def branches(self, arms: list[tuple[Truth, tuple[ir.Stmt, ...]]]) -> None:
        """Each body under its condition (the conditions exclusive, one of them true), then where any goes on."""
        before = self.active
        exits: Truth = False
        unchanged = True
        for condition, body in arms:
            entry = _and(before, condition)
            self.active = entry
            self.block(body)
            unchanged = unchanged and self.active is entry
            exits = _or(exits, self.active)
        self.active = before if unchanged else exits  # where no arm left, execution goes on where it was

    def switch(self, statement: ir.Switch) -> None:
        value = self.settled(statement.value)
        arms: list[tuple[Truth, tuple[ir.Stmt, ...]]] = []
        matched: Truth = False
        for constants, body in statement.cases:
            condition: Truth = False
            for constant in constants:
                condition = _or(condition, _eq(value, _wrap(constant)))
            arms.append((condition, body))
            matched = _or(matched, condition)
        self.branches([*arms, (_not(matched), statement.default)])

    def for_range(self, loop: ir.ForRange) -> None:
        start = self.expr(loop.start)
        stop = self.expr(loop.stop)
        self.settle()

        def enter(count: int) -> Truth:
            counter = _add(start, count * loop.step)
            running = _lt(counter, stop) if loop.step > 0 else _lt(stop, counter)
            self.locals[loop.variable] = _ite(_and(self.active, running), counter, self.locals.get(loop.variable, 0))
            return running

        self.loop(loop.line, enter, loop.body)

    def for_each(self, loop: ir.ForEach) -> None:
        def enter(count: int) -> Truth:
            cells, length = self.cells(loop.sequence)
            running = _lt(count, length)
            element = cells[count] if count < len(cells) else 0
            self.locals[loop.variable] = _ite(_and(self.active, running), element, self.locals.get(loop.variable, 0))
            return running

        self.loop(loop.line, enter, loop.body)

    def loop(self, line: int, enter: Callable[[int], Truth], body: tuple[ir.Stmt, ...]) -> None:
        """The loop unrolled while it may run: where the inputs decide whether it goes on, at most `unroll` passes
        (past that, `overflow`); `enter(k)` gives whether pass k runs and sets the loop's variable there."""
        exits: Truth = False
        self.loops.append([False, False])
        count = unrolled = 0
        while True:
            running = enter(count)
            exits = _or(exits, _and(self.active, _not(running)))
            self.active = _and(self.active, running)
            if self.active is False:
                break
            if not isinstance(self.active, bool):
                if unrolled == self.unroll:
                    self.overflow = _or(self.overflow, self.active)
                    self.overrun_lines.append(line)
                    break
                unrolled += 1
            self.loops[-1][1] = False
            self.block(body)
            self.active = _or(self.active, self.loops[-1][1])
            count += 1
        broken = self.loops.pop()[0]
        self.active = _or(exits, broken)

    # expressions: each may leave for the original (an index out of range), collected in `fault` under `guard`

    def settled(self, expr: ir.Expr) -> Value:
        value = self.expr(expr)
        self.settle()
        return value

    def settled_truth(self, expr: ir.Expr) -> Truth:
        truth = self.truth(expr)
        self.settle()
        return truth

    def settle(self) -> None:
        """The statement's expressions are evaluated: where one left for the original, the call did."""
        fault, self.fault = self.fault, False
        self.leave_where(fault)

    def cells(self, name: str) -> tuple[list[Value], Value]:
        if name in self.outputs:
            return self.outputs[name].cells, self.outputs[name].length
        cells = self.written.get(name, self.fixed.get(name))
        if cells is None:
            raise _Unsupported(f"`{name}` is not a sequence the check knows")
        return cells, len(cells)

    def index(self, expr: ir.Expr, length: Value) -> Value:
        """The index `expr` after Python's negative indices; out of range it is a fault."""
        raw = self.expr(expr)
        index = _ite(_lt(raw, 0), _add(raw, length), raw)
        outside = _or(_lt(index, 0), _not(_lt(index, length)))
        self.fault = _or(self.fault, _and(self.guard, outside))
        return index

    def truth(self, expr: ir.Expr) -> Truth:
        if isinstance(expr, ir.Compare):
            left, right = self.expr(expr.left), self.expr(expr.right)
            unsigned = self.widths.held_unsigned(expr.left) or self.widths.held_unsigned(expr.right)
            return (UNSIGNED_COMPARISONS if unsigned else COMPARISONS)[expr.op](left, right)
        if isinstance(expr, ir.Logical):
            left = self.truth(expr.left)
            guard = self.guard
            self.guard = _and(guard, left if expr.op == "and" else _not(left))
            right = self.truth(expr.right)
            self.guard = guard
            return _and(left, right) if expr.op == "and" else _or(left, right)
        if isinstance(expr, ir.Not):
            return _not(self.truth(expr.operand))
        if isinstance(expr, ir.BytesBelow):
            return self.bytes_below(expr)
        return _ne(self.expr(expr), 0)

    def bytes_below(self, expr: ir.BytesBelow) -> Truth:
        """`count` elements from `index` exist and are all below `bound`; it reads nothing outside, so no fault."""
        cells, length = self.cells(expr.sequence)
        index = self.expr(expr.index)
        below: Truth = _and(_not(_lt(index, 0)), _not(_lt(_add(length, -expr.count), index)))
        for offset in range(expr.count):
            below = _and(below, _lt(_select(cells, _add(index, offset)), expr.bound))
        return below

    def select(self, expr: ir.Select) -> Value:
        """`then if condition else orelse`: only the side taken may leave for the original."""
        condition = self.truth(expr.condition)
        guard = self.guard
        self.guard = _and(guard, condition)
        then = self.expr(expr.then)
        self.guard = _and(guard, _not(condition))
        orelse = self.expr(expr.orelse)
        self.guard = guard
        return _ite(condition, then, orelse)

    def expr(self, expr: ir.Expr) -> Value:
        if isinstance(expr, ir.Const):
            return _wrap(expr.value)  # a constant past 2**63 - 1 as the bits C holds it in
        if isinstance(expr, ir.Local):
            return self.locals.get(expr.name, 0)
        if isinstance(expr, ir.Length):
            return self.cells(expr.sequence)[1]
        if isinstance(expr, ir.Load):
            cells, length = self.cells(expr.sequence)
            return _select(cells, self.index(expr.index, length))
        if isinstance(expr, ir.Binary):
            left, right = self.expr(expr.left), self.expr(expr.right)
            if expr.op == ">>" and any(map(self.widths.held_unsigned, (expr, expr.left, expr.right))):
                return _logical_shift(left, right)  # on `uint64_t`, as `print_c` computes it there
            return BINARY[expr.op](left, right)
        if isinstance(expr, ir.Unary):
            operand = self.expr(expr.operand)
            return _wrap(-operand) if isinstance(operand, int) and expr.op == "-" else (-operand if expr.op == "-" else ~operand)
        if isinstance(expr, ir.ToInt):
            return self.expr(expr.operand)
        if isinstance(expr, ir.Select):
            return self.select(expr)
        if isinstance(expr, ir.Compare | ir.Logical | ir.Not | ir.BytesBelow):
            return _ite(self.truth(expr), 1, 0)
        raise _Unsupported(f"line {expr.line}: {type(expr).__name__} is not modelled")


# values: a Python int (signed 64 bits) where it is known, else a 64-bit bit-vector. A division by 0 or a shift
# out of 0..63 that `ranges` proved unreachable can still be built on a path never taken: it gives 0 there.


def _wrap(value: int) -> int:
    value &= MASK
    return value - (1 << 64) if value >> 63 else value


def _signed(value: int) -> int:
    return _wrap(value)


def _bv(value: Value) -> z3.BitVecRef:
    return z3.BitVecVal(value & MASK, 64) if isinstance(value, int) else value


def _extend(variable: z3.BitVecRef, bits: int, signed: bool) -> z3.BitVecRef:
    if bits == 64:
        return variable
    return z3.SignExt(64 - bits, variable) if signed else z3.ZeroExt(64 - bits, variable)


def _narrow(value: Value, kind: str) -> Value:
    """`value` held in a C variable of `kind` and read back as 64 bits."""
    bits, signed = WIDTHS[kind]
    if bits == 64:
        return value
    if isinstance(value, int):
        low = value & ((1 << bits) - 1)
        return low - (1 << bits) if signed and low >> (bits - 1) else low
    return _extend(z3.Extract(bits - 1, 0, value), bits, signed)


def _truth(value: Truth) -> z3.BoolRef:
    return z3.BoolVal(value) if isinstance(value, bool) else value


def _same(first: object, second: object) -> bool:
    if isinstance(first, int | bool) or isinstance(second, int | bool):
        return type(first) is type(second) and first == second
    return first.eq(second)  # type: ignore[union-attr]


def _ite(condition: Truth, then: Value, otherwise: Value) -> Value:
    if isinstance(condition, bool):
        return then if condition else otherwise
    if _same(then, otherwise):
        return then
    return z3.If(condition, _bv(then), _bv(otherwise))


def _and(first: Truth, second: Truth) -> Truth:
    if first is False or second is False:
        return False
    if first is True:
        return second
    if second is True:
        return first
    return z3.And(first, second)


def _or(first: Truth, second: Truth) -> Truth:
    if first is True or second is True:
        return True
    if first is False:
        return second
    if second is False:
        return first
    return z3.Or(first, second)


def _not(value: Truth) -> Truth:
    return (not value) if isinstance(value, bool) else z3.Not(value)


def _lifted(concrete: Callable[[int, int], object], symbolic: Callable[[z3.BitVecRef, z3.BitVecRef], object]):
    def operation(left: Value, right: Value):
        if isinstance(left, int) and isinstance(right, int):
            return concrete(left, right)
        return symbolic(_bv(left), _bv(right))

    return operation


def _floordiv(left: z3.BitVecRef, right: z3.BitVecRef) -> z3.BitVecRef:
    quotient, remainder = left / right, z3.SRem(left, right)
    return z3.If(z3.And(remainder != 0, (left < 0) != (right < 0)), quotient - 1, quotient)


def _mod(left: z3.BitVecRef, right: z3.BitVecRef) -> z3.BitVecRef:
    remainder = z3.SRem(left, right)
    return z3.If(z3.And(remainder != 0, (remainder < 0) != (right < 0)), remainder + right, remainder)


_add = _lifted(lambda a, b: _wrap(a + b), lambda a, b: a + b)
_eq = _lifted(lambda a, b: a == b, lambda a, b: a == b)
_ne = _lifted(lambda a, b: a != b, lambda a, b: a != b)
_lt = _lifted(lambda a, b: a < b, lambda a, b: a < b)


def _carryless(op: str) -> Callable[[Value, Value], Value]:
    return _lifted(lambda a, b: _wrap(carryless.on_ints(op, a, b)), lambda a, b: carryless.on_bitvectors(op, a, b))


BINARY: dict[str, Callable[[Value, Value], Value]] = {
    "+": _add,
    "-": _lifted(lambda a, b: _wrap(a - b), lambda a, b: a - b),
    "*": _lifted(lambda a, b: _wrap(a * b), lambda a, b: a * b),
    "//": _lifted(lambda a, b: _wrap(a // b) if b else 0, _floordiv),
    "%": _lifted(lambda a, b: a % b if b else 0, _mod),
    "&": _lifted(lambda a, b: a & b, lambda a, b: a & b),
    "|": _lifted(lambda a, b: a | b, lambda a, b: a | b),
    "^": _lifted(lambda a, b: a ^ b, lambda a, b: a ^ b),
    "<<": _lifted(lambda a, b: _wrap(a << b) if 0 <= b < 64 else 0, lambda a, b: a << b),
    ">>": _lifted(lambda a, b: a >> b if 0 <= b < 64 else 0, lambda a, b: a >> b),
    "min": _lifted(min, lambda a, b: z3.If(b < a, b, a)),
    "max": _lifted(max, lambda a, b: z3.If(b > a, b, a)),
    **{op: _carryless(op) for op in carryless.OPERATORS},
}
_logical_shift = _lifted(lambda a, b: _wrap((a & MASK) >> b) if 0 <= b < 64 else 0, z3.LShR)
COMPARISONS: dict[str, Callable[[Value, Value], Truth]] = {
    "<": _lt,
    "<=": _lifted(lambda a, b: a <= b, lambda a, b: a <= b),
    ">": _lifted(lambda a, b: a > b, lambda a, b: a > b),
    ">=": _lifted(lambda a, b: a >= b, lambda a, b: a >= b),
    "==": _eq,
    "!=": _ne,
}

UNSIGNED_COMPARISONS: dict[str, Callable[[Value, Value], Truth]] = {
    "<": _lifted(lambda a, b: a & MASK < b & MASK, z3.ULT),
    "<=": _lifted(lambda a, b: a & MASK <= b & MASK, z3.ULE),
    ">": _lifted(lambda a, b: a & MASK > b & MASK, z3.UGT),
    ">=": _lifted(lambda a, b: a & MASK >= b & MASK, z3.UGE),
    "==": _eq,
    "!=": _ne,
}
"""The comparisons where an operand is held in `uint64_t`: its bits read as unsigned (`ranges` proves the other
operand never negative there, so this is Python's comparison)."""

MODELLED = {
    ir.Const: None, ir.Local: None, ir.Length: None, ir.Load: None, ir.ToInt: None, ir.Not: None,
    ir.Binary: tuple(BINARY), ir.Compare: tuple(COMPARISONS), ir.Unary: ("-", "~"), ir.Logical: ("and", "or"),
    ir.Assign: None, ir.Store: None, ir.Append: None, ir.Pop: None, ir.If: None, ir.While: None, ir.ForRange: None,
    ir.ForEach: None,
    ir.Break: None, ir.Continue: None, ir.Return: None, ir.Raise: None,
    ir.Select: None, ir.BytesBelow: None, ir.Switch: None,
}  # fmt: skip
"""The IR nodes the symbolic execution models, with the operators it knows where a node has one."""


def _select(cells: list[Value], index: Value) -> Value:
    """`cells[index]`, chosen by the index's low bits (a multiplexer the solver takes better than a chain of
    equalities); an index outside the cells is a fault elsewhere, so what it chooses is never compared."""
    if isinstance(index, int):
        return cells[index] if 0 <= index < len(cells) else 0
    if not cells:
        return 0
    level: list[Value] = list(cells)
    bit = 0
    while len(level) > 1:
        chosen = z3.Extract(bit, bit, index) == 1
        level = [_ite(chosen, level[k + 1], level[k]) if k + 1 < len(level) else level[k] for k in range(0, len(level), 2)]
        bit += 1
    return level[0]
