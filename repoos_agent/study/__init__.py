"""`repoos eval`: the study protocol (runs, dialogues, medians), comparison tools, statistics and reports."""

from repoos_agent.study.competitors import TOOLS, ToolMeasurement, ToolSpec, measure_tool, parse_tools
from repoos_agent.study.protocol import DialogueRecord, InstanceResult, StudyConfig, chosen_kernels, run_study
from repoos_agent.study.report import csv_columns, print_table, write_outputs
from repoos_agent.study.summary import StudySummary, summarize

__all__ = [
    "TOOLS", "DialogueRecord", "InstanceResult", "StudyConfig", "StudySummary", "ToolMeasurement", "ToolSpec",
    "chosen_kernels", "csv_columns", "measure_tool", "parse_tools", "print_table", "run_study", "summarize", "write_outputs",
]  # fmt: skip
