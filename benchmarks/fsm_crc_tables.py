"""The shift-register rewrites on the two bundled CRCs: the native baseline, byte-table and slicing-by-4/8 on 1 MB
of random bytes, the best of 15 interleaved runs each, printed (not stored).

Run: `python benchmarks/fsm_crc_tables.py` from the repository's root.
"""

from __future__ import annotations

import importlib
import random
import time
from pathlib import Path

from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.rewrites import Step, apply_steps
from repoos_agent.ingest.parse import functions, parse_source, text

KERNELS = ("crc16_ccitt", "crc32")
VARIANTS = ((), (Step("byte-table"),), (Step("slicing", {"k": 4}),), (Step("slicing", {"k": 8}),))
RUNS = 15


def main() -> None:
    data = random.Random(0).randbytes(1 << 20)
    for name in KERNELS:
        path = Path("kernels/fsm") / f"{name}.py"
        node = next(n for n in functions(parse_source(path.read_text(), str(path))) if text(n.child_by_field_name("name")) == name)
        baseline = lower_for(node, {"data": b"", "crc": 0})
        original = getattr(importlib.import_module(f"kernels.fsm.{name}"), name)
        natives = {v.label: FsmNative(v.function, original) for v in (apply_steps(baseline, steps) for steps in VARIANTS)}
        expected = original(data[:4096])
        best = dict.fromkeys(natives, float("inf"))
        for _ in range(RUNS):
            for label, native in natives.items():
                assert native(data[:4096]) == expected
                start = time.perf_counter()
                native(data)
                best[label] = min(best[label], time.perf_counter() - start)
        for label, seconds in best.items():
            print(
                f"{name:12s} {label:14s} {seconds * 1e3:7.2f} ms  {seconds * 1e9 / len(data):6.2f} ns/byte  "
                f"{best['baseline'] / seconds:5.1f}x the native baseline"
            )


if __name__ == "__main__":
    main()
