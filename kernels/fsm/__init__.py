"""Branchy byte-level kernels written as plain Python: checksums, decoders, validators, a tokenizer, an interpreter.

Each is a state machine over bytes or characters: `while` loops that exit on the data, if/elif ladders,
wrap-around by masking, output built in a `bytearray` or a list, and `raise` on invalid input.
"""
