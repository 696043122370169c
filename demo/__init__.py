"""Gradio tabs of the ClarifyLab app: one package per tab (layout, handlers, its own figures), and
``plots``, the run and episode figures that two tabs draw, and ``styles``, the style rules they share (a tab never
imports another tab).
"""

__all__ = ["decisions", "live", "plots", "replays", "styles"]
