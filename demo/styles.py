"""Style rules the tabs share, and how a tab carries its own.

Gradio 6 takes ``css`` only at ``launch``, and the app's Blocks are launched by ``app.py``, by Spaces and by the
tests alike, so each tab renders its rules in a hidden block: they apply to the page and take no room.
"""

import gradio as gr

WHOLE_WORDS = """
.whole-words th, .whole-words th *, .whole-words td, .whole-words td *, .whole-words .body-cell,
.whole-words .body-cell * {
  word-break: keep-all !important; overflow-wrap: anywhere !important; hyphens: none; text-overflow: clip !important; }
.whole-words th, .whole-words td, .whole-words .body-cell { padding: 4px 4px !important; font-size: 12px !important; }
.whole-words th * { white-space: normal !important; overflow: visible !important; }
@media (max-width: 1000px) {
  .wide-table .table-container, .half-table .table-container { overflow-x: auto !important; }
  .wide-table .table-wrap { min-width: 1220px !important; } .half-table .table-wrap { min-width: 600px !important; } }
"""
"""For a table (``elem_classes``) whose cells hold identifiers and numbers: lines break between words, never inside
one (Gradio 6 draws body cells as ``div.body-cell``, not ``td``), in a smaller font so that they fit. On a narrow
screen (a phone) a table keeps its desktop width and scrolls sideways, where its fixed column widths would leave a
few letters a line: ``wide-table`` one across the page, ``half-table`` one beside a chart."""

MARK_WIDTHS = ["22%", "15%", "15%", "14%", "14%", "20%"]
"""Column widths of the hidden-profile-vs-plan table (``core.runs.transcripts.MARK_COLUMNS``), which Replays and
Live play both draw: "hallucinated" whole beside long plan values."""


def tab_style(css: str = "") -> gr.HTML:
    """The tab's own ``css`` and the shared rules, in a hidden block (call it inside the tab)."""
    return gr.HTML(f"<style>{WHOLE_WORDS}{css}</style>", visible="hidden")
