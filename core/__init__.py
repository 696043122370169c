"""ClarifyLab core: the clarify environment, rubrics, agents, episode logs, decisions, calibration.

Nothing here imports gradio, trl, demo/ or train/; those layers are built on top of this package.
"""

from core.records import Episode, RewardBreakdown, Scenario, ToolCall, Turn

__all__ = ["Episode", "RewardBreakdown", "Scenario", "ToolCall", "Turn"]
