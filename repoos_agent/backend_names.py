"""The names of the compiler backends (`--compiler`), apart from the backends themselves.

The command line offers them as choices; building its parser must not load the code generators
and toolchains behind each name (`backends/build.py` keys its printers' tables by these names).
"""

BACKENDS = ("c", "mlir")
