"""The fsm IR printed as one C function, `rp_fsm`, which returns a code: 0 when the function returned, the code of
a `raise` (the caller raises its exception again), or `RP_ORIGINAL` when the call must run the Python original.

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

    def text(self) -> str:
        parameters = []
        for parameter in self.function.parameters:
            if isinstance(parameter, ir.Sequence):
                const = "" if parameter.written else "const "
                parameters.append(f"{const}{ir.DTYPES[parameter.dtype]} *py_{parameter.name}, int64_t py_{parameter.name}_len")
            else:
                parameters.append(f"int64_t py_{parameter}")
        parameters += ["int64_t *rp_result", "rp_buffer *rp_out"]
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
            index = f"rp_at(&rp_leave, {self.expr(statement.index)}, {length})"
            return [f"{pad}{data}[{index}] = ({kind})({self.expr(statement.value)});"]
        if isinstance(statement, ir.Append):
            return [f"{pad}rp_append(&rp_leave, rp_out, {self.expr(statement.value)});"]
        if isinstance(statement, ir.If):
            lines = [f"{pad}if ({self.expr(statement.condition)}) {{", *self.block(statement.then, depth + 1)]
            if statement.orelse:
                lines += [f"{pad}}} else {{", *self.block(statement.orelse, depth + 1)]
            return [*lines, f"{pad}}}"]
        if isinstance(statement, ir.While):
            return [f"{pad}while ({self.expr(statement.condition)}) {{", *self.block(statement.body, depth + 1), f"{pad}}}"]
        if isinstance(statement, ir.ForRange | ir.ForEach):
            return self.for_loop(statement, depth)
        if isinstance(statement, ir.Break):
            return [f"{pad}break;"]
        if isinstance(statement, ir.Continue):
            return [f"{pad}continue;"]
        if isinstance(statement, ir.Return):
            if statement.value is None:
                return [f"{pad}return 0;"]
            return [f"{pad}*rp_result = (int64_t)({self.expr(statement.value)});", f"{pad}return 0;"]
        return [f"{pad}return {statement.code};  /* raise {statement.exception} */"]

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
        return [f"{pad}{head} {{", f"{pad}    {first}", *self.block(loop.body, depth + 1), f"{pad}}}"]

    def sequence(self, name: str) -> tuple[str, str]:
        """A sequence's data and length in C."""
        if name == self.function.buffer:
            return "rp_out->data", "rp_out->len"
        return f"py_{name}", f"py_{name}_len"

    def masked_within(self, load: ir.Load) -> bool:
        """A constant table read at `x & C` with `C` below its length: the index is in range, so no check (a CRC's
        table lookup is the loop's whole work)."""
        table = self.function.tables.get(load.sequence)
        index = load.index
        if table is None or not (isinstance(index, ir.Binary) and index.op == "&"):
            return False
        masks = [side.value for side in (index.left, index.right) if isinstance(side, ir.Const)]
        return any(0 <= mask < len(_entries(table)) for mask in masks)

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
        if isinstance(expr, ir.Logical):
            return f"({self.expr(expr.left)} {'&&' if expr.op == 'and' else '||'} {self.expr(expr.right)})"
        return f"(!{self.expr(expr.operand)})"


def _entries(table: bytes | ir.Table) -> tuple[int, ...] | bytes:
    return table.entries if isinstance(table, ir.Table) else table


def _table(name: str, table: bytes | ir.Table) -> str:
    """A constant table as a `static const` array of its entries' width, with its length as the loads read it."""
    if isinstance(table, ir.Table):
        kind, values = ir.TABLE_DTYPES[table.dtype], [f"UINT64_C({value})" for value in table.entries]
    else:
        kind, values = "uint8_t", [str(value) for value in table]
    return (
        f"static const {kind} py_{name}[{max(len(values), 1)}] = {{{', '.join(values) or '0'}}};\n"
        f"static const int64_t py_{name}_len = {len(values)};"
    )
