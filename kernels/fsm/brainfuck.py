"""brainfuck: a Brainf*** program compiled to a small bytecode, then run by a dispatch loop.

Compiling folds runs of `+ -` into one ADD and of `> <` into one MOVE, and gives each bracket the index of
its partner, so a jump takes one step. Cells are bytes that wrap around; reading past the end of the input
stores 0. Unmatched brackets raise ValueError, and moving off either end of the tape raises IndexError.
The program run here adds 13 to every input byte, moving each byte cell by cell, up to the first zero byte.
"""

import random

NAME = "brainfuck"
CATEGORY = "interpreters"
SIZES = {
    "MINI": {"n": 4},
    "SMALL": {"n": 100},
    "MEDIUM": {"n": 600},
    "LARGE": {"n": 2_500},
    "EXTRALARGE": {"n": 12_000},
}

SHIFT_BY_13 = b",[>+++++++++++++<[->+<]>.[-]<,]"

ADD = 0
MOVE = 1
JUMP_IF_ZERO = 2
JUMP_UNLESS_ZERO = 3
OUTPUT = 4
INPUT = 5
FOLDED = {ord("+"): (ADD, 1), ord("-"): (ADD, -1), ord(">"): (MOVE, 1), ord("<"): (MOVE, -1)}


def init(n: int) -> dict:
    """The shifting program and `n` random non-zero input bytes (a zero byte would end it)."""
    rng = random.Random(13)
    return {"program": SHIFT_BY_13, "input_data": bytes(rng.randrange(1, 256) for _ in range(n))}


def brainfuck(program, input_data, tape_size=30_000):
    ops, args = _compile(program)
    tape = bytearray(tape_size)
    out = bytearray()
    pointer = 0
    read = 0
    pc = 0
    while pc < len(ops):
        op = ops[pc]
        if op == ADD:
            tape[pointer] = (tape[pointer] + args[pc]) & 0xFF
        elif op == MOVE:
            pointer += args[pc]
            if pointer < 0 or pointer >= tape_size:
                raise IndexError(f"instruction {pc} moves to cell {pointer}, off the tape of {tape_size} cells")
        elif op == JUMP_IF_ZERO:
            if tape[pointer] == 0:
                pc = args[pc]
        elif op == JUMP_UNLESS_ZERO:
            if tape[pointer] != 0:
                pc = args[pc]
        elif op == OUTPUT:
            out.append(tape[pointer])
        elif read < len(input_data):
            tape[pointer] = input_data[read]
            read += 1
        else:
            tape[pointer] = 0
        pc += 1
    return out


def _compile(program):
    ops = bytearray()
    args = []
    open_brackets = []
    for position, char in enumerate(program):
        if char in FOLDED:
            op, step = FOLDED[char]
            if ops and ops[-1] == op:
                args[-1] += step
            else:
                ops.append(op)
                args.append(step)
        elif char == ord("["):
            open_brackets.append((len(ops), position))
            ops.append(JUMP_IF_ZERO)
            args.append(0)
        elif char == ord("]"):
            if not open_brackets:
                raise ValueError(f"unmatched ] at {position}")
            partner, _ = open_brackets.pop()
            args[partner] = len(ops)
            ops.append(JUMP_UNLESS_ZERO)
            args.append(partner)
        elif char == ord("."):
            ops.append(OUTPUT)
            args.append(0)
        elif char == ord(","):
            ops.append(INPUT)
            args.append(0)
    if open_brackets:
        raise ValueError(f"unmatched [ at {open_brackets[-1][1]}")
    return ops, args
