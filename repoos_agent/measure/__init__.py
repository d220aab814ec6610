"""Measurement: timing with warm-ups, repeats and a process-wide lock; output comparison."""

from repoos_agent.measure.compare import Comparison, compare_outputs, tolerance_for
from repoos_agent.measure.lock import measurement_lock
from repoos_agent.measure.timing import Timing, time_runs

__all__ = ["Comparison", "Timing", "compare_outputs", "measurement_lock", "time_runs", "tolerance_for"]
