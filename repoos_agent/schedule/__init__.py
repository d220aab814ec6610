"""Schedules: the transformation language and its application to a kernel."""

from repoos_agent.schedule.language import LoopRef, Primitive, Schedule, ScheduleError, StatementRef, parse_schedule
from repoos_agent.schedule.state import Contraction, LoweredSchedule, ScheduleState, apply_schedule

__all__ = [
    "Contraction", "LoopRef", "LoweredSchedule", "Primitive", "Schedule", "ScheduleError", "ScheduleState", "StatementRef",
    "apply_schedule", "parse_schedule",
]  # fmt: skip
