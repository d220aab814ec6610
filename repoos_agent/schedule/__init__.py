"""Schedules: the transformation language and its application to a kernel."""

from repoos_agent.schedule.language import parse_schedule
from repoos_agent.schedule.state import Contraction, LoweredSchedule, ScheduleState, apply_schedule
from repoos_agent.schedule.terms import LoopRef, Primitive, Schedule, ScheduleError, StatementRef

__all__ = [
    "Contraction", "LoopRef", "LoweredSchedule", "Primitive", "Schedule", "ScheduleError", "ScheduleState", "StatementRef",
    "apply_schedule", "parse_schedule",
]  # fmt: skip
