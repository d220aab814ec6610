"""The fsm track: branchy byte-level code (state machines, parsers, checksums) lowered to a small structured IR of
its own (ir.py), its integer widths proven (ranges.py), printed as C (print_c.py), compiled and called on the
caller's buffers (native.py), and checked against the Python original (compare.py); registered in track.py."""
