"""Layout of the Replays tab: pick runs, filter episodes, read one, compare two, see the overview.

Only components and event wiring live here; every event calls a function of
``demo.replay_handlers``. Nothing is loaded while the layout is built: runs are listed on page
load and read on first use, so the app starts fast.
"""

from pathlib import Path

import gradio as gr

from core.families import DIFFICULTIES, FAMILIES
from core.records import Termination
from core.replay_plots import family_legend
from demo import replay_handlers as h

TERMINATIONS = list(Termination.__args__)


def _filters() -> list[gr.components.Component]:
    with gr.Row(equal_height=True):
        family = gr.Dropdown(list(FAMILIES), multiselect=True, label="Family", scale=3)
        difficulty = gr.CheckboxGroup(list(DIFFICULTIES), label="Difficulty", scale=2)
        termination = gr.Dropdown(TERMINATIONS, multiselect=True, label="Ended by", scale=2)
    with gr.Row(equal_height=True):
        gate = gr.Radio(h.GATES, value="any", label="Format gate", scale=2)
        score_min = gr.Slider(0, 1, value=0, step=0.01, label="Score at least", scale=2)
        score_max = gr.Slider(0, 1, value=1, step=0.01, label="Score at most", scale=2)
        text = gr.Textbox(label="Search transcripts", placeholder="e.g. budget, zoom, seed10003 (Enter)",
                          scale=3)
    return [family, difficulty, score_min, score_max, gate, termination, text]


def _episode_view():
    header = gr.Markdown("Pick an episode in the table or the list above.")
    with gr.Row():
        chat = gr.Chatbot(label="Transcript", height=620, scale=5, buttons=["copy_all"],
                          feedback_options=None, group_consecutive_messages=False)
        with gr.Column(scale=6):
            breakdown = gr.Plot(label="Rubric breakdown", show_label=False)
            marks = gr.Dataframe(label="Hidden profile vs. submitted plan (★ critical, ⚠ stated but "
                                 "never revealed)", interactive=False, wrap=True, max_height=320,
                                 column_widths=["25%", "17%", "17%", "12%", "12%", "17%"])
    link = gr.Markdown()
    return header, chat, marks, breakdown, link


def build(demo: gr.Blocks, replays_dir: str | Path) -> None:
    """Lay out the Replays tab inside ``demo`` (call it within a ``gr.Tab``) and wire its events."""
    root = gr.State(str(replays_dir))
    uploads = gr.State({})
    with gr.Row(equal_height=True):
        runs = gr.Dropdown([], multiselect=True, label="Runs", scale=4, allow_custom_value=True,
                           info="Shipped runs under replays/, plus any log you open here")
        upload = gr.File(label="Open a log (.jsonl, or a published trace .json)", scale=2, height=110)
        keep_valid = gr.Checkbox(label="Keep valid episodes when some records are bad", scale=1)
    upload_note = gr.Markdown()
    query_note = gr.Markdown()
    with gr.Accordion("All runs: policy, rubric, size and mean score with its 95% interval", open=True):
        runs_table = gr.Dataframe(interactive=False, wrap=True, max_height=300)
    with gr.Tabs():
        with gr.Tab("Episodes"):
            filters = _filters()
            with gr.Row(equal_height=True):
                count = gr.Markdown()
                csv_btn = gr.Button("⬇ Table as CSV", size="sm", scale=0)
                jsonl_btn = gr.Button("⬇ Episodes as JSONL", size="sm", scale=0)
            export = gr.File(label="Download", visible=False, height=60)
            table = gr.Dataframe(interactive=False, max_height=360, elem_id="replay-table",
                                 label="Episodes (click a row to open it; click a header to sort)")
            picker = gr.Dropdown([], label="Episode", allow_custom_value=True, filterable=True)
            header, chat, marks, breakdown, link = _episode_view()
        with gr.Tab("Compare"):
            with gr.Row():
                run_a = gr.Dropdown([], label="Run a", allow_custom_value=True)
                run_b = gr.Dropdown([], label="Run b", allow_custom_value=True)
            comp_note = gr.Markdown()
            diff_plot = gr.Plot(show_label=False)
            diff_table = gr.Dataframe(interactive=False, max_height=300, label="Per-scenario scores")
            scenario = gr.Dropdown([], label="Shared scenario to read side by side")
            with gr.Row():
                chat_a = gr.Chatbot(label="Run a", height=520, feedback_options=None)
                chat_b = gr.Chatbot(label="Run b", height=520, feedback_options=None)
        with gr.Tab("Overview"):
            gr.HTML(f"<div style='font-size:13px'>The picked runs, under the Episodes tab's filters. "
                    f"Family colours: {family_legend()}</div>")
            with gr.Row():
                fam_plot, comp_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)
            with gr.Row():
                score_plot, q_plot = gr.Plot(show_label=False), gr.Plot(show_label=False)

    state = [root, uploads]
    selection = [runs, *filters]
    demo.load(h.on_load, [root], [runs_table, runs, run_a, run_b, picker, query_note],
              api_name="replays_load")
    gr.on([runs.change, *[f.change for f in filters[:-1]], filters[-1].submit],
          h.filter_episodes, state + selection, [table, picker, count], api_name="filter_episodes")
    gr.on([runs.change, *[f.change for f in filters[:-1]], filters[-1].submit],
          h.overview, state + selection, [fam_plot, score_plot, q_plot, comp_plot], api_name="overview")
    table.select(h.pick_row, [table], [picker], api_name=False)
    picker.change(h.show_episode, state + [picker], [header, chat, marks, breakdown, link],
                  api_name="show_episode")
    upload.upload(h.upload_log, [root, upload, keep_valid, uploads, runs],
                  [uploads, upload_note, runs, run_a, run_b], api_name="upload_log")
    csv_btn.click(h.export_table, state + selection, [export], api_name="export_csv")
    jsonl_btn.click(h.export_episodes, state + selection, [export], api_name="export_jsonl")
    gr.on([run_a.change, run_b.change], h.compare, state + [run_a, run_b],
          [comp_note, diff_table, diff_plot, scenario], api_name="compare")
    scenario.change(h.compare_episode, state + [run_a, run_b, scenario], [chat_a, chat_b],
                    api_name="compare_episode")
