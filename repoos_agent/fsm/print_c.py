"""The fsm IR printed as one C function, `rp_fsm`, which returns a code: 0 when the function returned, the code of
a `raise` (the caller raises its exception again, its message formatted with the values left in `rp_raised`), or
`RP_ORIGINAL` when the call must run the Python original.

The printer only prints: `ranges.check_widths` has proven that every value fits where it is held. Ring arithmetic
(`+ - * <<`) is printed on `uint64_t`, which is exact where the result fits and is the source's own wrap-around
under a mask; `//` and `%` round as Python's do. An index out of a sequence's range (after Python's negative
indices), a guarded counter past its bound or a failed allocation leaves through `longjmp` with `RP_ORIGINAL`:
the Python original then raises its own `IndexError`, with its message. An index `ranges` proved in range, and an
assignment it proved within `GUARD`, is printed without its check. A select (`x = c ? a : b`) whose sides cannot
fault is printed as a conditional move over both (`rp_select`; on x86-64 a `cmov` after the condition's own compare
or bit test, elsewhere a mask), which compilers cannot turn back into a jump the data would mispredict, as they do
with `?:`. Python names are printed as `py_NAME`.

The loops start on 64-byte lines (`#pragma GCC optimize("align-loops=64", "align-jumps=64")`, GCC
only). gcc aligns loops to 16 bytes by default, so whether a short hot loop (a few instructions, a select and the
guards) straddles two 64-byte lines depends on whatever precedes it in the function; where it does, the front end
fetches two lines a pass (on x86-64 the decoded-op cache is filled and read by 64-byte lines) and the loop runs
markedly slower, by the luck of the layout, not the code. A rotated loop's top is reached only by its back edge
(gcc jumps in at the test), so gcc aligns it as a jump target, hence both options; the padding before such a label
is never executed, and before a loop entered by falling through it runs once per entry.

A value `ranges` found may be past 2**63 - 1 (a 64-bit varint), and never negative, is held in `uint64_t`: its local
is declared so, and the operations on it (`| & ^ >> <<` and comparisons, all it allows) are printed on `uint64_t`,
cast back to `int64_t` where their result fits.
"""

from __future__ import annotations

from repoos_agent.fsm import carryless, ir
from repoos_agent.fsm.ranges import GUARD, HIGH, Widths, elements

ENTRY = "rp_fsm"
RELEASE = "rp_release"
TABLES = "rp_tables"
ORIGINAL = -1
RING = {"+": "+", "-": "-", "*": "*", "<<": "<<"}
GUARDS = {(False, False): "rp_guard", (True, False): "rp_guard_high", (False, True): "rp_guard_low", (True, True): ""}
"""The check an assignment to a guarded local needs, by which of its sides (low, high) are proven."""
COMPARE_SELECTS = {
    "<": ("lt", "l"),
    "<=": ("le", "le"),
    ">": ("gt", "g"),
    ">=": ("ge", "ge"),
    "==": ("eq", "e"),
    "!=": ("ne", "ne"),
}
"""A select on a comparison, by its operator: the helper's suffix and the x86-64 condition code of its `cmov`."""
COMPARE_SELECTS_X86 = "\n".join(
    f"static inline int64_t rp_select_{suffix}(int64_t x, int64_t y, int64_t a, int64_t b) {{\n"
    f'    __asm__("cmp %2, %1\\n\\tcmov{code} %3, %0" : "+r"(b) : "r"(x), "r"(y), "r"(a) : "cc");\n'
    "    return b;\n}\n"
    for suffix, code in COMPARE_SELECTS.values()
)
COMPARE_SELECTS_PORTABLE = "\n".join(
    f"static inline int64_t rp_select_{suffix}(int64_t x, int64_t y, int64_t a, int64_t b) {{ return rp_select(x {op} y, a, b); }}"
    for op, (suffix, _) in COMPARE_SELECTS.items()
)

PRELUDE = f"""\
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* each hot loop on one 64-byte line where it fits, whatever precedes it (fsm/print_c.py says why) */
#pragma GCC optimize("align-loops=64", "align-jumps=64")
#endif

typedef struct {{ uint8_t *data; int64_t len; int64_t cap; }} rp_buffer;

static inline int64_t rp_at(jmp_buf *leave, int64_t i, int64_t n) {{
    if (i < 0) i += n;
    if (i < 0 || i >= n) longjmp(*leave, 1);
    return i;
}}

static inline int64_t rp_guard(jmp_buf *leave, int64_t v) {{
    /* one unsigned compare for both sides: v + GUARD is above 2 * GUARD just where v is outside [-GUARD, GUARD] */
    if ((uint64_t)v + UINT64_C({GUARD}) > UINT64_C({2 * GUARD})) longjmp(*leave, 1);
    return v;
}}

static inline int64_t rp_guard_high(jmp_buf *leave, int64_t v) {{
    if (v > INT64_C({GUARD})) longjmp(*leave, 1);
    return v;
}}

static inline int64_t rp_guard_low(jmp_buf *leave, int64_t v) {{
    if (v < -INT64_C({GUARD})) longjmp(*leave, 1);
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

#if defined(__x86_64__)
/* a conditional move the compiler cannot turn back into a jump the data would mispredict, as it does with `?:`;
   the condition's own compare or bit test sets the flags, so a loop-carried select costs the move alone */
static inline int64_t rp_select(int64_t c, int64_t a, int64_t b) {{
    __asm__("test %1, %1\\n\\tcmovne %2, %0" : "+r"(b) : "r"(c), "r"(a) : "cc");
    return b;
}}

static inline int64_t rp_select_bits(int64_t x, int64_t m, int64_t a, int64_t b) {{
    __asm__("test %1, %2\\n\\tcmovne %3, %0" : "+r"(b) : "r"(x), "r"(m), "r"(a) : "cc");
    return b;
}}

{COMPARE_SELECTS_X86}
#else
static inline int64_t rp_select(int64_t c, int64_t a, int64_t b) {{
    uint64_t m = UINT64_C(0) - (uint64_t)(c != 0);
    __asm__("" : "+r"(m));  /* opaque: a known mask would let the compiler see a branch again */
    return (int64_t)((uint64_t)b ^ (((uint64_t)a ^ (uint64_t)b) & m));
}}

static inline int64_t rp_select_bits(int64_t x, int64_t m, int64_t a, int64_t b) {{ return rp_select(x & m, a, b); }}

{COMPARE_SELECTS_PORTABLE}
#endif

/* eight bytes as one word, the first one lowest (`big` 0) or highest, in one load; checked, leaving where they
   are not all there */
static inline uint64_t rp_word(const uint8_t *p, int big) {{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return big ? w : __builtin_bswap64(w);
#else
    return big ? __builtin_bswap64(w) : w;
#endif
}}

static inline uint64_t rp_word_at(jmp_buf *leave, const uint8_t *p, int64_t i, int64_t n, int big) {{
    if (i < 0 || i > n - 8) longjmp(*leave, 1);
    return rp_word(p + i, big);
}}

/* the carry-less product's low and high words: one PCLMULQDQ for both where the CPU has it */
#if defined(__PCLMUL__)
#include <wmmintrin.h>
static inline __m128i rp_clmul128(uint64_t a, uint64_t b) {{
    return _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
}}
static inline uint64_t rp_clmul(uint64_t a, uint64_t b) {{ return (uint64_t)_mm_cvtsi128_si64(rp_clmul128(a, b)); }}
static inline uint64_t rp_clmulhi(uint64_t a, uint64_t b) {{
    __m128i p = rp_clmul128(a, b);
    return (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p));
}}
#else
static inline uint64_t rp_clmul(uint64_t a, uint64_t b) {{
    uint64_t r = 0;
    for (int i = 0; i < 64; i++) r ^= ((b >> i) & 1) ? a << i : 0;
    return r;
}}
static inline uint64_t rp_clmulhi(uint64_t a, uint64_t b) {{
    uint64_t r = 0;
    for (int i = 1; i < 64; i++) r ^= ((b >> i) & 1) ? a >> (64 - i) : 0;
    return r;
}}
#endif

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


def print_c(function: ir.Function, widths: Widths) -> str:
    """The C source of `function`, with the checks `widths` (the analysis of this very function) leaves: its guarded
    locals checked against `GUARD` after each assignment, on the sides not proven, every index not proven in range
    checked."""
    return _Printer(function, widths).text()


class _Printer:
    def __init__(self, function: ir.Function, widths: Widths) -> None:
        self.function = function
        self.guarded = widths.guarded
        self.within_guard = widths.within_guard
        self.in_range = widths.in_range
        self.widths = widths
        self.sequences = {p.name: p for p in function.parameters if isinstance(p, ir.Sequence)}
        self.loops = 0
        self.labels = 0
        self.exits: list[list[str] | None] = []
        """Per enclosing loop or `switch` (None), innermost last: a loop's label for a `break` from inside a
        `switch` (C's `break` would leave the `switch`), once one needs it."""

    def text(self) -> str:
        parameters, arguments = [], []
        for parameter in self.function.parameters:
            if isinstance(parameter, ir.Sequence):
                const = "" if parameter.written else "const "
                parameters.append(f"{const}{ir.DTYPES[parameter.dtype]} *py_{parameter.name}, int64_t py_{parameter.name}_len")
                arguments += [f"py_{parameter.name}", f"py_{parameter.name}_len"]
            else:
                parameters.append(f"int64_t py_{parameter}")
                arguments.append(f"py_{parameter}")
        outputs = ["int64_t *rp_result", "rp_buffer *rp_out", "int64_t *rp_raised"]
        outputs += [f"rp_buffer *rp_out_{output.name}" for output in self.function.outputs]
        arguments += ["rp_result", "rp_out", "rp_raised", *(f"rp_out_{output.name}" for output in self.function.outputs)]
        # the outputs are the caller's own locals, apart from every argument and each other
        body = ["jmp_buf *rp_leave", *parameters, *(output.replace(" *", " *restrict ") for output in outputs)]
        names = {p for p in self.function.parameters if isinstance(p, str)}
        declarations = [
            f"    {'uint64_t' if name in self.widths.unsigned_locals else ir.DTYPES.get(kind, 'int64_t')} py_{name} = 0;"
            for name, kind in self.function.locals.items()
            if name not in names
        ]
        tables = _tables(self.function.tables)
        lines = [
            PRELUDE,
            *tables,
            f"/* {self.function.name}, lowered by the fsm track */",
            "/* apart from the `setjmp`, which would keep every value live across it in memory, not in registers */",
            f"static __attribute__((noinline)) int64_t rp_body({', '.join(body)}) {{",
            *declarations,
            *self.block(self.function.body, 1),
            *([] if self.function.body and isinstance(self.function.body[-1], ir.Return | ir.Raise) else ["    return 0;"]),
            "}",
            "",
            f"int64_t {ENTRY}({', '.join([*parameters, *outputs])}) {{",
            "    jmp_buf rp_leave;",
            f"    if (setjmp(rp_leave)) return {ORIGINAL};",
            f"    return rp_body(&rp_leave, {', '.join(arguments)});",
            "}",
        ]
        return "\n".join(lines) + "\n"

    def block(self, statements: tuple[ir.Stmt, ...], depth: int) -> list[str]:
        return [line for statement in statements for line in self.statement(statement, depth)]

    def statement(self, statement: ir.Stmt, depth: int) -> list[str]:
        pad = "    " * depth
        if isinstance(statement, ir.Assign):
            if statement.name in self.function.output_names:
                return [f"{pad}{self.sequence(statement.name)[1]} = 0;"]
            value = self.expr(statement.value)
            if statement.name in self.guarded:
                guard = GUARDS[self.within_guard.get(id(statement), (False, False))]
                value = f"{guard}(rp_leave, {value})" if guard else value
            return [f"{pad}py_{statement.name} = {value};"]
        if isinstance(statement, ir.Store):
            data, length = self.sequence(statement.sequence)
            kind = ir.DTYPES[self.sequences[statement.sequence].dtype] if statement.sequence in self.sequences else "uint8_t"
            if statement.sequence in self.function.output_names and self.function.output_kind(statement.sequence) == ir.LIST:
                kind = "int64_t"
            index = self.index(statement, statement.index, length)
            return [f"{pad}{data}[{index}] = ({kind})({self.stored(statement)});"]
        if isinstance(statement, ir.Append):
            append = "rp_append_int" if self.function.output_kind(statement.sequence) == ir.LIST else "rp_append"
            out = "rp_out" if statement.sequence == self.function.buffer else f"rp_out_{statement.sequence}"
            return [f"{pad}{append}(rp_leave, {out}, {self.stored(statement)});"]
        if isinstance(statement, ir.Pop):
            return [f"{pad}{self.sequence(statement.sequence)[1]} -= 1;"]
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

    def stored(self, statement: ir.Store | ir.Append) -> str:
        """The value stored or appended, checked against `GUARD` on the sides not proven where the list's values
        are guarded (`ranges.elements`)."""
        value = self.expr(statement.value)
        if elements(statement.sequence) not in self.guarded:
            return value
        guard = GUARDS[self.within_guard.get(id(statement), (False, False))]
        return f"{guard}(rp_leave, {value})" if guard else value

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
        if name in self.function.output_names:
            out = f"rp_out_{name}"
            return f"((int64_t *){out}->data)" if self.function.output_kind(name) == ir.LIST else f"{out}->data", f"{out}->len"
        if name in self.function.tables:
            return f"{TABLES}.py_{name}", f"py_{name}_len"
        return f"py_{name}", f"py_{name}_len"

    def index(self, node: ir.Load | ir.Store | ir.Word, index: ir.Expr, length: str) -> str:
        """An index as C reads it: as it is where it is proven in range, else checked (and a negative one counted
        from the end)."""
        if id(node) in self.in_range:
            return self.expr(index)
        return f"rp_at(rp_leave, {self.expr(index)}, {length})"

    def expr(self, expr: ir.Expr) -> str:
        if isinstance(expr, ir.Const):
            if expr.value > HIGH:
                return f"UINT64_C({expr.value})"
            return f"INT64_C({expr.value})" if expr.value > -(1 << 63) else "INT64_MIN"
        if isinstance(expr, ir.Local):
            return f"py_{expr.name}"
        if isinstance(expr, ir.Length):
            return self.sequence(expr.sequence)[1]
        if isinstance(expr, ir.Load):
            data, length = self.sequence(expr.sequence)
            return f"{data}[{self.index(expr, expr.index, length)}]"
        if isinstance(expr, ir.Word):
            data, length = self.sequence(expr.sequence)
            big = int(expr.order == "big")
            if id(expr) in self.in_range:
                return f"rp_word((const uint8_t *){data} + {self.expr(expr.index)}, {big})"
            return f"rp_word_at(rp_leave, (const uint8_t *){data}, {self.expr(expr.index)}, {length}, {big})"
        if isinstance(expr, ir.Binary):
            left, right = self.expr(expr.left), self.expr(expr.right)
            if expr.op in carryless.OPERATORS:
                product = f"rp_{expr.op}((uint64_t)({left}), (uint64_t)({right}))"
                return product if self.wide(expr) else f"(int64_t){product}"
            if self.wide(expr) or self.wide(expr.left) or (expr.op != "<<" and self.wide(expr.right)):
                return self.unsigned_binary(expr, left, right)
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
            kind = "uint64_t" if self.wide(expr.left) or self.wide(expr.right) else "int64_t"
            return f"(({kind})({self.expr(expr.left)}) {expr.op} ({kind})({self.expr(expr.right)}))"
        if isinstance(expr, ir.Select):
            sides = self.expr(expr.then), self.expr(expr.orelse)
            if _cannot_fault(expr.then) and _cannot_fault(expr.orelse):
                return self.select(expr.condition, *sides)
            return f"({self.expr(expr.condition)} ? {sides[0]} : {sides[1]})"
        if isinstance(expr, ir.BytesBelow):
            data, length = self.sequence(expr.sequence)
            index = self.expr(expr.index)
            return f"rp_bytes_below((const uint8_t *){data}, {length}, {index}, {expr.count}, {expr.bound})"
        if isinstance(expr, ir.Logical):
            return f"({self.expr(expr.left)} {'&&' if expr.op == 'and' else '||'} {self.expr(expr.right)})"
        return f"(!{self.expr(expr.operand)})"

    def wide(self, expr: ir.Expr) -> bool:
        """Whether `expr` is held in `uint64_t`: a local or an operation `ranges` found may be past 2**63 - 1."""
        return self.widths.held_unsigned(expr)

    def unsigned_binary(self, expr: ir.Binary, left: str, right: str) -> str:
        """`expr` on `uint64_t`, where it or an operand may be past 2**63 - 1 (`ranges` allows `| & ^ >> <<` and
        `+ - *` under a mask there): cast to `int64_t` where its result fits. A shift's amount stays as it is."""
        amount = expr.op in ("<<", ">>")
        operation = f"((uint64_t)({left}) {expr.op} {right if amount else f'(uint64_t)({right})'})"
        return operation if self.wide(expr) else f"(int64_t){operation}"

    def select(self, condition: ir.Expr, then: str, orelse: str) -> str:
        """A select of sides that cannot fault: on a comparison or a bit test, the helper that sets the flags with
        that very compare or test (the condition's operands are int64 values, as `expr` prints them; one held in
        `uint64_t` takes the plain select)."""
        if isinstance(condition, ir.Binary | ir.Compare) and any(map(self.wide, (condition.left, condition.right))):
            return f"rp_select({self.expr(condition)}, {then}, {orelse})"
        if isinstance(condition, ir.Compare):
            operands = f"(int64_t)({self.expr(condition.left)}), (int64_t)({self.expr(condition.right)})"
            return f"rp_select_{COMPARE_SELECTS[condition.op][0]}({operands}, {then}, {orelse})"
        if isinstance(condition, ir.Binary) and condition.op == "&":
            operands = f"(int64_t)({self.expr(condition.left)}), (int64_t)({self.expr(condition.right)})"
            return f"rp_select_bits({operands}, {then}, {orelse})"
        return f"rp_select({self.expr(condition)}, {then}, {orelse})"


SAFE_BINARY = frozenset({"+", "-", "*", "&", "|", "^", "min", "max"})
"""Operators C computes for any operands without fault or undefined behaviour, as printed (ring arithmetic on
`uint64_t`); a shift is safe by a constant within 0 to 63 only."""


def _cannot_fault(expr: ir.Expr) -> bool:
    """Whether C may compute `expr` where the source would not (the side of a select not taken): no read, no
    division, no shift by an amount not known, no call that may leave."""
    if isinstance(expr, ir.Const | ir.Local | ir.Length):
        return True
    if isinstance(expr, ir.Binary):
        if expr.op in ("<<", ">>"):
            shift_known = isinstance(expr.right, ir.Const) and 0 <= expr.right.value <= 63
            return shift_known and _cannot_fault(expr.left)
        return expr.op in SAFE_BINARY and _cannot_fault(expr.left) and _cannot_fault(expr.right)
    if isinstance(expr, ir.Compare | ir.Logical):
        return _cannot_fault(expr.left) and _cannot_fault(expr.right)
    if isinstance(expr, ir.Unary | ir.ToInt | ir.Not):
        return _cannot_fault(expr.operand)
    if isinstance(expr, ir.Select):
        return all(_cannot_fault(part) for part in (expr.condition, expr.then, expr.orelse))
    return False


def _tables(tables: dict[str, bytes | tuple[int, ...] | ir.Table]) -> list[str]:
    """The constant tables as the members of one `static const` struct, `TABLES`, each an array of its entries'
    width (a tuple of the source's ints in 64 signed bits), and each one's length as the loads read it.

    One struct, since a shared library reaches a static array through a register holding its address: slicing's
    sixteen tables, apart, would take sixteen registers and spill them in its loop, where in one struct a load is
    the struct's one address plus the member's constant offset."""
    if not tables:
        return []
    members, values, lengths = [], [], []
    for name, table in tables.items():
        if isinstance(table, ir.Table):
            kind, entries = ir.TABLE_DTYPES[table.dtype], [f"UINT64_C({value})" for value in table.entries]
        elif isinstance(table, bytes):
            kind, entries = "uint8_t", [str(value) for value in table]
        else:
            kind, entries = "int64_t", [f"INT64_C({value})" if value > -(1 << 63) else "INT64_MIN" for value in table]
        members.append(f"    {kind} py_{name}[{max(len(entries), 1)}];")
        values.append(f"    {{{', '.join(entries) or '0'}}},")
        lengths.append(f"static const int64_t py_{name}_len = {len(entries)};")
    return ["static const struct {", *members, f"}} {TABLES} = {{", *values, "};", *lengths]
