"""The fsm track's menu of rewrites, one module per rewrite family; importing this package registers them all.

`registry` holds the table, its decorator and `apply_steps`; `shift_register` the CRC tables (byte-table, slicing).
"""

from repoos_agent.fsm.rewrites import shift_register
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Rewrite, Step, Variant, apply_steps, menu

__all__ = ["REWRITES", "NotApplicable", "Rewrite", "Step", "Variant", "apply_steps", "menu", "shift_register"]
