"""The fsm track's menu of rewrites, one module per rewrite family; importing this package registers them all.

`registry` holds the table, its decorator and `apply_steps`.
"""

from repoos_agent.fsm.rewrites import unroll as unroll  # registers `unroll`
from repoos_agent.fsm.rewrites.registry import REWRITES, NotApplicable, Rewrite, Step, Variant, apply_steps, menu

__all__ = ["REWRITES", "NotApplicable", "Rewrite", "Step", "Variant", "apply_steps", "menu"]
