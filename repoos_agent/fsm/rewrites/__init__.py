"""The fsm track's menu of rewrites, one module per rewrite family; importing this package registers them all.

`registry` holds the table, its decorator and `apply_steps`; `shift_register` the CRC tables (byte-table, slicing), `clmul_fold` the
CRC folded by carry-less products.
"""

from repoos_agent.fsm.rewrites import ascii_fast_path as ascii_fast_path  # registers `ascii-fast-path`
from repoos_agent.fsm.rewrites import branchless as branchless  # registers `branchless`
from repoos_agent.fsm.rewrites import clmul_fold as clmul_fold  # registers `clmul-fold`
from repoos_agent.fsm.rewrites import dfa as dfa  # registers `dfa`
from repoos_agent.fsm.rewrites import jump_table as jump_table  # registers `jump-table`
from repoos_agent.fsm.rewrites import run_fusion as run_fusion  # registers `run-fusion`
from repoos_agent.fsm.rewrites import shift_register as shift_register  # registers `byte-table`, `slicing`
from repoos_agent.fsm.rewrites import unroll as unroll  # registers `unroll`
from repoos_agent.fsm.rewrites import unswitch as unswitch  # registers `unswitch`
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Rewrite, Step, Variant, apply_steps, menu

__all__ = ["REWRITES", "NotApplicable", "Rewrite", "Step", "Variant", "apply_steps", "menu"]
