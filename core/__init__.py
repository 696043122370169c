"""ClarifyLab core: the domain, as plain functions and typed records.

One package per wing: ``clarify`` (the task: scenarios, simulated user, rubrics, environment,
agents), ``runs`` (logged episodes: logs, summaries, comparison, import, replays on disk), ``live``
(a live session and its streamed turn), ``decision`` (the decision engine, its data, training
maths, scores and reports), ``models`` (every model the app knows: entries, availability, loading,
the load-once cache). Shared at the top: ``records`` (boundary types), ``stats`` (bootstrap
intervals) and ``calibration`` (calibration metrics).
Nothing here imports gradio, trl, demo/ or train/; those layers are built on top of this package.
"""

from core.records import Episode, RewardBreakdown, Scenario, ToolCall, Turn

__all__ = ["Episode", "RewardBreakdown", "Scenario", "ToolCall", "Turn"]
