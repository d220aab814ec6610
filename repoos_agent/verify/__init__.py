"""Verification: an independent Z3 proof of the loop nest we generate."""

from repoos_agent.verify.translation import Verification, verify_loop_nest

__all__ = ["Verification", "verify_loop_nest"]
