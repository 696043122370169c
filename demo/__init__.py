"""Gradio tabs of the ClarifyLab app: one package per tab (layout, handlers, its own figures)."""

__all__ = ["decisions", "live", "replays"]
