"""Measurement: timing with warm-ups, repeats and a process-wide lock; output comparison."""

from repoos_agent.measure.compare import Comparison, compare_outputs, tolerance_for
from repoos_agent.measure.timing import MEASUREMENT_LOCK, Timing, time_runs

__all__ = ["MEASUREMENT_LOCK", "Comparison", "Timing", "compare_outputs", "time_runs", "tolerance_for"]
