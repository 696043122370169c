"""ClarifyLab core: the domain, as plain functions and typed records.

One package per wing: ``clarify`` (the task: scenarios, simulated user, rubrics, environment,
agents), ``runs`` (logged episodes: logs, summaries, comparison, import, replays on disk), ``live``
(a live session and its streamed turn), ``decision`` (the decision engine, its data, training
maths, scores and reports). Shared at the top: ``records`` (boundary types), ``stats`` (bootstrap
intervals), ``calibration`` (calibration metrics) and ``registry`` (every model the app knows).
Nothing here imports gradio, trl, demo/ or train/; those layers are built on top of this package.
"""

from core.records import Episode, RewardBreakdown, Scenario, ToolCall, Turn

__all__ = ["Episode", "RewardBreakdown", "Scenario", "ToolCall", "Turn"]
