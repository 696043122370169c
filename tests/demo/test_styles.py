"""The tabs' shared style: one hidden block per tab, holding the tab's own rules and the whole-word table rules."""

import gradio as gr

from core.runs.transcripts import MARK_COLUMNS
from demo.styles import MARK_WIDTHS, WHOLE_WORDS, tab_style


def test_a_tab_style_is_a_hidden_block_with_its_rules_and_the_shared_ones():
    with gr.Blocks():
        block = tab_style(".mine { color: red; }")
    assert isinstance(block, gr.HTML) and block.visible == "hidden"
    assert block.value.startswith("<style>") and block.value.endswith("</style>")
    assert WHOLE_WORDS in block.value and ".mine { color: red; }" in block.value


def test_the_whole_word_rules_never_break_inside_a_word_and_scroll_on_a_phone():
    assert "word-break: keep-all" in WHOLE_WORDS and "overflow-wrap: anywhere" in WHOLE_WORDS
    assert "@media (max-width: 1000px)" in WHOLE_WORDS and "overflow-x: auto" in WHOLE_WORDS


def test_the_mark_widths_cover_every_column_and_the_whole_row():
    assert len(MARK_WIDTHS) == len(MARK_COLUMNS)
    assert sum(int(w.rstrip("%")) for w in MARK_WIDTHS) == 100
