"""Layout of the Replays tab: pick runs, filter episodes, read one, compare two, see the overview.

Only components and event wiring live here; every event calls a function of
``demo.replays.handlers``. Nothing is loaded while the layout is built: runs are listed on page
load and read on first use, so the app starts fast.
"""

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from core.clarify.families import DIFFICULTIES, FAMILIES
from core.records import Termination
from core.runs.comparison import SHOWN_HEADERS
from core.runs.episode_table import TABLE_COLUMNS
from core.runs.transcripts import MARK_COLUMNS, MARKS_TITLE
from demo.plots import family_legend
from demo.replays import handlers as h
from demo.replays.beliefs import show_beliefs
from demo.styles import MARK_WIDTHS, tab_style

TERMINATIONS = list(Termination.__args__)
EPISODE_COLUMNS = [c for c in TABLE_COLUMNS if c != "recorded"]
"""Headers of the episode table before any run is read (never gradio's "1 2 3")."""


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
    header = gr.Markdown(h.PICK_HINT)
    with gr.Row():
        chat = gr.Chatbot(label="Transcript", height=620, scale=5, buttons=["copy_all"], autoscroll=False,
                          feedback_options=None, group_consecutive_messages=False)
        with gr.Column(scale=6):
            breakdown = gr.Plot(label="Rubric breakdown", show_label=False)
            marks = gr.Dataframe(label=MARKS_TITLE, interactive=False, wrap=True, max_height=320, headers=MARK_COLUMNS,
                                 column_widths=MARK_WIDTHS, elem_classes=["whole-words", "half-table"])
    link = gr.Markdown()
    return header, chat, marks, breakdown, link


def _runs_bar() -> SimpleNamespace:
    with gr.Row(equal_height=True):
        runs = gr.Dropdown([], multiselect=True, label="Runs", scale=4, allow_custom_value=True,
                           info="Shipped runs under replays/, plus any log you open here")
        upload = gr.File(label="Open a log (.jsonl, or a published trace .json)", scale=2, height=110)
        keep_valid = gr.Checkbox(label="Keep valid episodes when some records are bad", scale=1)
    upload_note, query_note = gr.Markdown(), gr.Markdown()
    with gr.Accordion("All runs: policy, rubric, size and mean score with its 95% interval", open=True):
        runs_table = gr.Dataframe(interactive=False, wrap=True, max_height=380, headers=h.RUN_COLUMNS,
                                  elem_classes=["whole-words", "wide-table"],
                                  column_widths=["23%", "22%", "6%", "12%", "8%", "8%", "11%", "10%"])
    return SimpleNamespace(runs=runs, upload=upload, keep_valid=keep_valid, upload_note=upload_note,
                           query_note=query_note, runs_table=runs_table)


def _episodes_tab() -> SimpleNamespace:
    filters = _filters()
    with gr.Row(equal_height=True):
        count = gr.Markdown()
        csv_btn = gr.Button("⬇ Table as CSV", size="sm", scale=0)
        jsonl_btn = gr.Button("⬇ Episodes as JSONL", size="sm", scale=0)
    export = gr.File(label="Download", visible=False, height=60)
    # Fixed widths, wide enough for the shipped ids and headers in whole words (a longer id breaks where it must)
    # without pushing the other columns off-screen; with a "recorded" column (imported logs) the run column sizes
    # itself.
    table = gr.Dataframe(interactive=False, max_height=360, elem_id="replay-table", wrap=True,
                         headers=EPISODE_COLUMNS, elem_classes=["whole-words", "wide-table"],
                         column_widths=["25%", "15%", "8%", "5%", "5%", "8%", "7%", "7%", "9%", "11%"],
                         label="Episodes (click a row to open it; click a header to sort)")
    picker = gr.Dropdown([], label="Episode", allow_custom_value=True, filterable=True)
    view = _episode_view()
    beliefs = [gr.Markdown(elem_id="belief-note"), gr.Plot(show_label=False, visible=False, elem_id="belief-bars")]
    return SimpleNamespace(filters=filters, count=count, csv_btn=csv_btn, jsonl_btn=jsonl_btn,
                           export=export, table=table, picker=picker, view=list(view), beliefs=beliefs)


def _compare_tab() -> SimpleNamespace:
    with gr.Row():
        run_a = gr.Dropdown([], label="Run a", allow_custom_value=True)
        run_b = gr.Dropdown([], label="Run b", allow_custom_value=True)
    note = gr.Markdown()
    plot = gr.Plot(show_label=False)
    table = gr.Dataframe(interactive=False, max_height=300, label="Per-scenario scores", wrap=True,
                         headers=SHOWN_HEADERS, elem_classes=["whole-words", "wide-table"],
                         column_widths=["34%", "18%", "12%", "12%", "12%", "12%"])
    scenario = gr.Dropdown([], label="Shared scenario to read side by side (the largest gap first)",
                           allow_custom_value=True)
    with gr.Row():
        chat_a = gr.Chatbot(label="Run a", height=520, feedback_options=None, autoscroll=False)
        chat_b = gr.Chatbot(label="Run b", height=520, feedback_options=None, autoscroll=False)
    return SimpleNamespace(run_a=run_a, run_b=run_b, note=note, plot=plot, table=table,
                           scenario=scenario, chat_a=chat_a, chat_b=chat_b)


def _overview_tab() -> list[gr.Plot]:
    gr.HTML(f"<div style='font-size:13px'>The picked runs, under the Episodes tab's filters. "
            f"Family colours: {family_legend()}</div>")
    with gr.Row():
        families, components = gr.Plot(show_label=False), gr.Plot(show_label=False)
    with gr.Row():
        scores, questions = gr.Plot(show_label=False), gr.Plot(show_label=False)
    return [families, scores, questions, components]


def build(demo: gr.Blocks, replays_dir: str | Path) -> SimpleNamespace:
    """Lay out the Replays tab inside ``demo`` (call it within a ``gr.Tab``) and wire its events.

    Returns what ``follow_live`` wires to the Live play tab."""
    # The session's uploads are keys into core.runs.uploads.STORE; closing the tab frees them.
    state = [gr.State(str(replays_dir)), gr.State({}, delete_callback=h.release_uploads)]
    tab_style()
    top = _runs_bar()
    with gr.Tabs():
        with gr.Tab("Episodes"):
            ep = _episodes_tab()
        with gr.Tab("Compare"):
            cmp = _compare_tab()
        with gr.Tab("Overview"):
            charts = _overview_tab()
    _wire(demo, state, top, ep, cmp, charts)
    return SimpleNamespace(state=state, runs=top.runs, run_a=cmp.run_a, run_b=cmp.run_b, picker=ep.picker)


def follow_live(tab: gr.Tab, tabs: gr.Tabs, shown: SimpleNamespace, played: SimpleNamespace) -> None:
    """A page's own Live play runs join its Replays runs when the tab opens or "Open in Replays" is
    pressed; they live in that page's state, so no other visitor's page lists or opens them."""
    root, uploads = shown.state
    pickers = [shown.runs, shown.run_a, shown.run_b]
    tab.select(h.adopt_session_runs, [root, uploads, played.session], [uploads, *pickers], api_name=False)
    played.open_replays.click(h.open_session_episode, [root, uploads, played.session, shown.runs],
                              [tabs, uploads, *pickers, shown.picker], api_name=False)


def _wire(demo, state, top, ep, cmp, charts) -> None:
    root, uploads = state
    selection = [top.runs, *ep.filters]
    triggers = [top.runs.change, *[f.change for f in ep.filters[:-1]], ep.filters[-1].submit]
    loaded = demo.load(h.on_load, [root], [top.runs_table, top.runs, cmp.run_a, cmp.run_b, ep.picker,
                                           top.query_note], api_name="replays_load")
    compared = [cmp.note, cmp.table, cmp.plot, cmp.scenario, cmp.chat_a, cmp.chat_b]
    loaded.then(h.compare, state + [cmp.run_a, cmp.run_b], compared, api_name=False)  # both runs are set now
    gr.on(triggers, h.filter_episodes, state + selection, [ep.table, ep.picker, ep.count],
          api_name="filter_episodes")
    gr.on(triggers, h.overview, state + selection, charts, api_name="overview")
    ep.table.select(h.pick_row, [ep.table], [ep.picker], api_name=False)
    ep.picker.change(h.show_episode, state + [ep.picker], ep.view, api_name="show_episode")
    ep.picker.change(show_beliefs, state + [ep.picker], ep.beliefs, api_name="show_beliefs")
    top.upload.upload(h.upload_log, [root, top.upload, top.keep_valid, uploads, top.runs],
                      [uploads, top.upload_note, top.runs, cmp.run_a, cmp.run_b, top.upload],
                      api_name="upload_log")
    ep.csv_btn.click(h.export_table, state + selection, [ep.export], api_name="export_csv")
    ep.jsonl_btn.click(h.export_episodes, state + selection, [ep.export], api_name="export_jsonl")
    # "always_last": a pick made while the last comparison still runs is compared after it (Gradio's default for
    # input events, "once", would drop it: run b picked right after run a stayed unshown)
    gr.on([cmp.run_a.input, cmp.run_b.input], h.compare, state + [cmp.run_a, cmp.run_b], compared,
          api_name="compare", trigger_mode="always_last")
    cmp.scenario.input(h.compare_episode, state + [cmp.run_a, cmp.run_b, cmp.scenario],
                        [cmp.chat_a, cmp.chat_b], api_name="compare_episode", trigger_mode="always_last")
