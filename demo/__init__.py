"""Gradio tabs of the ClarifyLab app: one layout module and one handlers module per tab."""
