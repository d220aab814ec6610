"""Code generation: the model and a schedule in, source text out."""

from repoos_agent.codegen.c import BoundsCheck, CArgument, CSource, generate_c

__all__ = ["BoundsCheck", "CArgument", "CSource", "generate_c"]
