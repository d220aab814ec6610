"""The fsm IR printed as one C function, `rp_fsm`, which returns a code: 0 when the function returned, the code of
a `raise` (the caller raises its exception again, its message formatted with the values left in `rp_raised`), or
`RP_ORIGINAL` when the call must run the Python original.

The printer only prints: `ranges.check_widths` has proven that every value fits where it is held. Ring arithmetic
(`+ - * <<`) is printed on `uint64_t`, which is exact where the result fits and is the source's own wrap-around
under a mask; `//` and `%` round as Python's do. An index out of a sequence's range (after Python's negative
indices), a guarded counter past its bound or a failed allocation leaves through `longjmp` with `RP_ORIGINAL`:
the Python original then raises its own `IndexError`, with its message. Python names are printed as `py_NAME`.
"""

from __future__ import annotations

from repoos_agent.fsm import ir
from repoos_agent.fsm.ranges import GUARD

ENTRY = "rp_fsm"
RELEASE = "rp_release"
ORIGINAL = -1
RING = {"+": "+", "-": "-", "*": "*", "<<": "<<"}

PRELUDE = f"""\
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {{ uint8_t *data; int64_t len; int64_t cap; }} rp_buffer;

static inline int64_t rp_at(jmp_buf *leave, int64_t i, int64_t n) {{
    if (i < 0) i += n;
    if (i < 0 || i >= n) longjmp(*leave, 1);
    return i;
}}

static inline int64_t rp_guard(jmp_buf *leave, int64_t v) {{
    if (v > INT64_C({GUARD}) || v < -INT64_C({GUARD})) longjmp(*leave, 1);
    return v;
}}

static inline int64_t rp_floordiv(int64_t a, int64_t b) {{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}}

static inline int64_t rp_mod(int64_t a, int64_t b) {{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}}

static inline int64_t rp_min(int64_t a, int64_t b) {{ return b < a ? b : a; }}

static inline int64_t rp_max(int64_t a, int64_t b) {{ return b > a ? b : a; }}

static inline int rp_bytes_below(const uint8_t *p, int64_t n, int64_t i, int64_t count, uint64_t bound) {{
    if (i < 0 || i > n - count) return 0;
    p += i;
    for (int64_t w = 0; w < count; w += 8) {{
        uint64_t word;
        memcpy(&word, p + w, 8);
        if (bound <= 0x80) {{
            /* a byte below 0x80 plus (0x80 - bound) sets its top bit just when it is not below the bound; a byte
               of 0x80 or more has it already (its carry into the next byte does not matter then) */
            if (((word + (0x80 - bound) * UINT64_C(0x0101010101010101)) | word) & UINT64_C(0x8080808080808080)) return 0;
        }} else {{
            for (int j = 0; j < 8; j++) if (p[w + j] >= bound) return 0;
        }}
    }}
    return 1;
}}

static void rp_append(jmp_buf *leave, rp_buffer *b, int64_t v) {{
    if (b->len == b->cap) {{
        int64_t cap = b->cap ? 2 * b->cap : 64;
        uint8_t *data = realloc(b->data, (size_t)cap);
        if (data == NULL) longjmp(*leave, 1);
        b->data = data;
        b->cap = cap;
    }}
    b->data[b->len++] = (uint8_t)v;
}}

static void rp_append_int(jmp_buf *leave, rp_buffer *b, int64_t v) {{
    if (b->len == b->cap) {{
        int64_t cap = b->cap ? 2 * b->cap : 64;
        uint8_t *data = realloc(b->data, (size_t)cap * sizeof(int64_t));
        if (data == NULL) longjmp(*leave, 1);
        b->data = data;
        b->cap = cap;
    }}
    ((int64_t *)b->data)[b->len++] = v;
}}

void {RELEASE}(void *data) {{ free(data); }}
"""


def print_c(function: ir.Function, guarded: frozenset[str]) -> str:
    """The C source of `function` (its locals in `guarded` checked against `GUARD` after each assignment)."""
    return _Printer(function, guarded).text()


class _Printer:
    def __init__(self, function: ir.Function, guarded: frozenset[str]) -> None:
        self.function = function
        self.guarded = guarded
        self.sequences = {p.name: p for p in function.parameters if isinstance(p, ir.Sequence)}
        self.loops = 0
        self.labels = 0
        self.exits: list[list[str] | None] = []
        """Per enclosing loop or `switch` (None), innermost last: a loop's label for a `break` from inside a
        `switch` (C's `break` would leave the `switch`), once one needs it."""

    def text(self) -> str:
        parameters = []
        for parameter in self.function.parameters:
            if isinstance(parameter, ir.Sequence):
                const = "" if parameter.written else "const "
                parameters.append(f"{const}{ir.DTYPES[parameter.dtype]} *py_{parameter.name}, int64_t py_{parameter.name}_len")
            else:
                parameters.append(f"int64_t py_{parameter}")
        parameters += ["int64_t *rp_result", "rp_buffer *rp_out", "int64_t *rp_raised"]
        names = {p for p in self.function.parameters if isinstance(p, str)}
        declarations = [
            f"    {ir.DTYPES.get(kind, 'int64_t')} py_{name} = 0;"
            for name, kind in self.function.locals.items()
            if name not in names
        ]
        tables = [_table(name, data) for name, data in self.function.tables.items()]
        lines = [
            PRELUDE,
            *tables,
            f"/* {self.function.name}, lowered by the fsm track */",
            f"int64_t {ENTRY}({', '.join(parameters)}) {{",
            "    jmp_buf rp_leave;",
            f"    if (setjmp(rp_leave)) return {ORIGINAL};",
            *declarations,
            *self.block(self.function.body, 1),
            *([] if self.function.body and isinstance(self.function.body[-1], ir.Return | ir.Raise) else ["    return 0;"]),
            "}",
        ]
        return "\n".join(lines) + "\n"

    def block(self, statements: tuple[ir.Stmt, ...], depth: int) -> list[str]:
        return [line for statement in statements for line in self.statement(statement, depth)]

    def statement(self, statement: ir.Stmt, depth: int) -> list[str]:
        pad = "    " * depth
        if isinstance(statement, ir.Assign):
            if statement.name == self.function.buffer:
                return [f"{pad}rp_out->len = 0;"]
            value = self.expr(statement.value)
            if statement.name in self.guarded:
                value = f"rp_guard(&rp_leave, {value})"
            return [f"{pad}py_{statement.name} = {value};"]
        if isinstance(statement, ir.Store):
            data, length = self.sequence(statement.sequence)
            kind = ir.DTYPES[self.sequences[statement.sequence].dtype] if statement.sequence in self.sequences else "uint8_t"
            if statement.sequence == self.function.buffer and self.function.buffer_kind == ir.LIST:
                kind = "int64_t"
            index = f"rp_at(&rp_leave, {self.expr(statement.index)}, {length})"
            return [f"{pad}{data}[{index}] = ({kind})({self.expr(statement.value)});"]
        if isinstance(statement, ir.Append):
            append = "rp_append_int" if self.function.buffer_kind == ir.LIST else "rp_append"
            return [f"{pad}{append}(&rp_leave, rp_out, {self.expr(statement.value)});"]
        if isinstance(statement, ir.If):
            lines = [f"{pad}if ({self.expr(statement.condition)}) {{", *self.block(statement.then, depth + 1)]
            if statement.orelse:
                lines += [f"{pad}}} else {{", *self.block(statement.orelse, depth + 1)]
            return [*lines, f"{pad}}}"]
        if isinstance(statement, ir.While):
            head = f"{pad}while ({self.expr(statement.condition)}) {{"
            return self.loop(head, [], statement.body, depth)
        if isinstance(statement, ir.ForRange | ir.ForEach):
            return self.for_loop(statement, depth)
        if isinstance(statement, ir.Switch):
            return self.switch(statement, depth)
        if isinstance(statement, ir.Break):
            return [f"{pad}{self.leave()};"]
        if isinstance(statement, ir.Continue):
            return [f"{pad}continue;"]
        if isinstance(statement, ir.Return):
            if statement.value is None:
                return [f"{pad}return 0;"]
            return [f"{pad}*rp_result = (int64_t)({self.expr(statement.value)});", f"{pad}return 0;"]
        values = [f"{pad}rp_raised[{k}] = (int64_t)({self.expr(value)});" for k, value in enumerate(statement.values)]
        return [*values, f"{pad}return {statement.code};  /* raise {statement.exception} */"]

    def for_loop(self, loop: ir.ForRange | ir.ForEach, depth: int) -> list[str]:
        pad = "    " * depth
        self.loops += 1
        k, stop = f"rp_k{self.loops}", f"rp_stop{self.loops}"
        if isinstance(loop, ir.ForRange):
            test = "<" if loop.step > 0 else ">"
            bounds = f"{k} = {self.expr(loop.start)}, {stop} = {self.expr(loop.stop)}"
            head = f"for (int64_t {bounds}; {k} {test} {stop}; {k} += {loop.step})"
            first = f"py_{loop.variable} = {k};"
        else:
            data, length = self.sequence(loop.sequence)
            head = f"for (int64_t {k} = 0; {k} < {length}; {k}++)"
            first = f"py_{loop.variable} = {data}[{k}];"
        return self.loop(f"{pad}{head} {{", [f"{pad}    {first}"], loop.body, depth)

    def loop(self, head: str, first: list[str], body: tuple[ir.Stmt, ...], depth: int) -> list[str]:
        """A loop's lines, with the label after it that a `break` inside a `switch` jumps to, where one does."""
        self.exits.append([])
        lines = [head, *first, *self.block(body, depth + 1), f"{'    ' * depth}}}"]
        label = self.exits.pop()
        return lines + [f"{'    ' * depth}{label[0]}:;"] if label else lines

    def switch(self, statement: ir.Switch, depth: int) -> list[str]:
        pad = "    " * depth
        lines = [f"{pad}switch ((int64_t)({self.expr(statement.value)})) {{"]
        self.exits.append(None)
        for values, body in statement.cases:
            lines += [f"{pad}case INT64_C({value}):" for value in values]
            lines += [f"{pad}{{", *self.block(body, depth + 1), f"{pad}    break;", f"{pad}}}"]
        lines += [f"{pad}default:", f"{pad}{{", *self.block(statement.default, depth + 1), f"{pad}    break;", f"{pad}}}"]
        self.exits.pop()
        return [*lines, f"{pad}}}"]

    def leave(self) -> str:
        """How a source `break` leaves its loop: C's `break`, or from inside a `switch` a jump past the loop."""
        if self.exits[-1] is not None:
            return "break"
        label = next(exit_ for exit_ in reversed(self.exits) if exit_ is not None)
        if not label:
            self.labels += 1
            label.append(f"rp_after{self.labels}")
        return f"goto {label[0]}"

    def sequence(self, name: str) -> tuple[str, str]:
        """A sequence's data and length in C."""
        if name == self.function.buffer:
            return "((int64_t *)rp_out->data)" if self.function.buffer_kind == ir.LIST else "rp_out->data", "rp_out->len"
        return f"py_{name}", f"py_{name}_len"

    def masked_within(self, load: ir.Load) -> bool:
        """A constant table read at `x & C` with `C` below its length: the index is in range, so no check (a CRC's
        table lookup is the loop's whole work)."""
        table = self.function.tables.get(load.sequence)
        index = load.index
        if table is None or not (isinstance(index, ir.Binary) and index.op == "&"):
            return False
        masks = [side.value for side in (index.left, index.right) if isinstance(side, ir.Const)]
        return any(0 <= mask < len(ir.entries(table)) for mask in masks)

    def expr(self, expr: ir.Expr) -> str:
        if isinstance(expr, ir.Const):
            return f"INT64_C({expr.value})" if expr.value > -(1 << 63) else "INT64_MIN"
        if isinstance(expr, ir.Local):
            return f"py_{expr.name}"
        if isinstance(expr, ir.Length):
            return self.sequence(expr.sequence)[1]
        if isinstance(expr, ir.Load):
            data, length = self.sequence(expr.sequence)
            if self.masked_within(expr):
                return f"{data}[{self.expr(expr.index)}]"
            return f"{data}[rp_at(&rp_leave, {self.expr(expr.index)}, {length})]"
        if isinstance(expr, ir.Binary):
            left, right = self.expr(expr.left), self.expr(expr.right)
            if expr.op in RING:
                shifted = right if expr.op == "<<" else f"(uint64_t)({right})"
                return f"(int64_t)((uint64_t)({left}) {RING[expr.op]} {shifted})"
            if expr.op == "//":
                return f"rp_floordiv({left}, {right})"
            if expr.op == "%":
                return f"rp_mod({left}, {right})"
            if expr.op in ("min", "max"):
                return f"rp_{expr.op}({left}, {right})"
            return f"((int64_t)({left}) {expr.op} (int64_t)({right}))"  # a byte promotes to 32-bit `int`
        if isinstance(expr, ir.Unary):
            operand = self.expr(expr.operand)
            return f"(int64_t)(UINT64_C(0) - (uint64_t)({operand}))" if expr.op == "-" else f"(~({operand}))"
        if isinstance(expr, ir.ToInt):
            return f"(int64_t)({self.expr(expr.operand)})"
        if isinstance(expr, ir.Compare):
            return f"((int64_t)({self.expr(expr.left)}) {expr.op} (int64_t)({self.expr(expr.right)}))"
        if isinstance(expr, ir.Select):
            return f"({self.expr(expr.condition)} ? {self.expr(expr.then)} : {self.expr(expr.orelse)})"
        if isinstance(expr, ir.BytesBelow):
            data, length = self.sequence(expr.sequence)
            index = self.expr(expr.index)
            return f"rp_bytes_below((const uint8_t *){data}, {length}, {index}, {expr.count}, {expr.bound})"
        if isinstance(expr, ir.Logical):
            return f"({self.expr(expr.left)} {'&&' if expr.op == 'and' else '||'} {self.expr(expr.right)})"
        return f"(!{self.expr(expr.operand)})"


def _table(name: str, table: bytes | tuple[int, ...] | ir.Table) -> str:
    """A constant table as a `static const` array of its entries' width (a tuple of the source's ints in 64 signed
    bits), with its length as the loads read it."""
    if isinstance(table, ir.Table):
        kind, values = ir.TABLE_DTYPES[table.dtype], [f"UINT64_C({value})" for value in table.entries]
    elif isinstance(table, bytes):
        kind, values = "uint8_t", [str(value) for value in table]
    else:
        kind, values = "int64_t", [f"INT64_C({value})" if value > -(1 << 63) else "INT64_MIN" for value in table]
    return (
        f"static const {kind} py_{name}[{max(len(values), 1)}] = {{{', '.join(values) or '0'}}};\n"
        f"static const int64_t py_{name}_len = {len(values)};"
    )
