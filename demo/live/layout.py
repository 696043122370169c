"""Layout of the Live play tab: pick a model and a scenario, then watch, answer, or play the agent.

Only components and event wiring live here; every event calls one function of
``demo.live.handlers``. Model turns run in the queue under the ``live-generate`` concurrency id
(``GENERATION_SLOTS`` at a time), so a long generation never blocks other tabs. Stop sets the
running generation's flag (kept in this session's state), which halts the model at its next token.
"""

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from core.clarify.families import DIFFICULTIES, FAMILIES
from core.live.session import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, MODES
from core.live.streaming import GenerationSettings
from core.runs.transcripts import MARK_COLUMNS, MARKS_TITLE
from demo.live import handlers as h
from demo.styles import MARK_WIDTHS, tab_style

GENERATION_SLOTS = 8
"""Turns in flight across all models: above each model's own queue bound (core.clarify.model_slots),
so a visitor whose model is busy sees the tab's own "waiting for another visitor" line, not Gradio's queue."""
CSS = """
#live-chat .message {font-size: 14px}
.live-note {min-height: 0 !important}
"""


def _count_note(n: int | str) -> str:
    return f"{n} / {MAX_ANSWER_CHARS} characters"


COUNT_JS = f"""(text) => {{
  const n = text.trim().length;
  return n > {MAX_ANSWER_CHARS}
    ? `⚠ ${{n}} / {MAX_ANSWER_CHARS} characters: too long for the model, shorten it before sending`
    : `${{n}} / {MAX_ANSWER_CHARS} characters`;
}}"""
"""The answer box's counter, run in the browser as the visitor types (no server call): it says
the answer is too long before it is sent, as ``core.live.session.answer_question`` would refuse it."""


def _clear_sent(session):
    """Empty the answer box once its answer was taken; a refused answer stays there to shorten."""
    waiting = session is not None and session.pending is not None
    return (gr.update(), gr.update()) if waiting else ("", _count_note(0))


def _pickers(models_dir):
    """The episode's settings, the model's note, and what only a playing model uses (hidden in agent mode)."""
    with gr.Row(equal_height=True) as model_row:
        choices = h.model_choices(models_dir)
        model = gr.Dropdown(choices, value=h.first_ready(choices), label="Model", scale=4, allow_custom_value=True,
                            info="✓ = on this machine; ✗ = see the note below", min_width=300)  # a phone: a line each
        path = gr.Textbox(label="…or a local model folder (Hugging Face layout)", scale=3,
                          placeholder="a folder name inside the models folder" if h.PUBLIC else
                          "/path/to/checkpoint, or a chat endpoint: openai:http://host:8000/v1#MODEL",
                          info="Public Space: only folders inside the models folder" if h.PUBLIC else None,
                          min_width=260)
        with gr.Column(scale=1, min_width=200):  # a checkbox keeps no width of its own: on a phone, its own line
            int8 = gr.Checkbox(label="int8 (big models on CPU)")
    model_note = gr.Markdown(elem_classes="live-note")
    with gr.Row(equal_height=True):
        mode = gr.Radio([(label, key) for key, label in MODES.items()], value="watch", label="Mode", scale=3)
        rubric = gr.Radio(["v1", "v2", "v3"], value="v1", label="Rubric", scale=1,
                          info="v3 (a cost per question) scores the cued requests")
    with gr.Row(equal_height=True):
        source = gr.Radio([(label, key) for key, label in h.SOURCES.items()], value="generated",
                          label="Scenario", scale=3)
        family = gr.Dropdown(["any", *FAMILIES], value="event_planning", label="Family", scale=2)
        difficulty = gr.Radio(list(DIFFICULTIES), value="easy", label="Difficulty", scale=2)
        seed = gr.Number(value=0, precision=0, label="Scenario seed", scale=1)
        # No minimum/maximum here: gradio would refuse every Start over this box even when the source
        # is "Generated"; core.live.session checks the index only when the held-out list is used.
        heldout = gr.Number(value=0, precision=0, label="Held-out index (0-299)", scale=1)
    defaults = GenerationSettings()
    with gr.Accordion("Generation settings", open=False) as generation:
        with gr.Row():
            temperature = gr.Slider(0, 2, value=defaults.temperature, step=0.05, label="Temperature (0 = greedy)",
                                    elem_id="live-temperature")
            max_new = gr.Slider(8, 1024, value=defaults.max_new_tokens, step=8, label="Max new tokens per turn",
                                elem_id="live-max-new")
            sample_seed = gr.Number(value=defaults.seed, precision=0, label="Sampling seed")
    return [model, path, mode, source, family, difficulty, seed, heldout, rubric, temperature, max_new,
            sample_seed, int8], model_note, [model_row, model_note, generation]


def _end_panel():
    with gr.Column(visible=False, elem_id="live-end") as panel:
        header = gr.Markdown()
        with gr.Row():
            breakdown = gr.Plot(label="Rubric breakdown", show_label=False, scale=1)
            marks = gr.Dataframe(label=MARKS_TITLE, interactive=False, wrap=True, scale=1,
                                 headers=MARK_COLUMNS, elem_classes=["whole-words", "half-table"],
                                 column_widths=MARK_WIDTHS)
        with gr.Row(equal_height=True):
            with gr.Column(scale=2):
                link = gr.HTML()
                open_replays = gr.Button("↗ Open in Replays", size="sm")
            download = gr.File(label="This session's episodes (JSONL)", height=60, scale=1)
    return [panel, header, breakdown, marks, link, download], open_replays


def build(demo: gr.Blocks, replays_dir: str | Path, models_dir: str | Path | None = None) -> SimpleNamespace:
    """Lay out the Live play tab inside ``demo`` (call it within a ``gr.Tab``) and wire its events.

    Returns the session state and the "Open in Replays" button, which app.py wires to this page's
    Replays tab (a session's runs are listed to its own page only)."""
    models_dir = str(models_dir) if models_dir else None
    root, models = gr.State(str(replays_dir)), gr.State(models_dir)
    session = gr.State(None)
    stop_flag = gr.State(None)
    """The running generation's threading.Event (set by Stop); one per browser session."""
    tab_style(CSS)
    settings, model_note, model_only = _pickers(models_dir)
    with gr.Row(equal_height=True):
        start = gr.Button("▶ Start episode", variant="primary")
        go = gr.Button("Continue ▸")
        stop = gr.Button("■ Stop", variant="stop")
    # Stop answers in its own line: written to the status, its reply could land after the stopped
    # generation's last word and hide it.
    stop_note = gr.Markdown(elem_classes="live-note", elem_id="live-stop-note")
    status = gr.Markdown(elem_classes="live-note")
    with gr.Row():
        with gr.Column(scale=5):
            chat = gr.Chatbot(label="Transcript", height=560, elem_id="live-chat", feedback_options=None,
                              group_consecutive_messages=False, buttons=["copy_all"])
            with gr.Row(visible=False, equal_height=True) as user_row:
                with gr.Column(scale=4):
                    # No max_length: the browser would cut a paste silently; the server refuses instead.
                    reply = gr.Textbox(label=f"Your answer (the model asked you; at most {MAX_ANSWER_CHARS} characters)",
                                       placeholder="A short phrase, as the user would; the card on the right has "
                                       "your profile", elem_id="live-reply")
                    reply_count = gr.Markdown(_count_note(0), elem_classes="live-note", elem_id="live-reply-count")
                send = gr.Button("Send answer", variant="primary", scale=1)
            with gr.Column(visible=False) as agent_row:
                with gr.Row(equal_height=True):
                    question = gr.Textbox(label="Ask the user", scale=4, placeholder="e.g. How many guests?",
                                          max_length=MAX_QUESTION_CHARS)
                    ask = gr.Button("Ask", variant="primary", scale=1)
                with gr.Row(equal_height=True):
                    plan = gr.Code(label="Plan (JSON object)", language="json", value="{}", scale=4, lines=3)
                    with gr.Column(scale=1):
                        propose = gr.Button("Propose plan", variant="primary")
                        info = gr.Button("Get task info")
        with gr.Column(scale=2):
            budget = gr.Markdown()
            card = gr.Markdown("Start an episode to see its task.")
            profile = gr.Dataframe(headers=["field (★ critical)", "hidden value"], label="Hidden profile",
                                   interactive=False, visible=False, wrap=True)
    with gr.Column(visible=False, elem_id="live-beliefs") as belief_panel:
        belief_note = gr.Markdown()
        belief_plot = gr.Plot(label="The agent's beliefs", show_label=False)
    end, open_replays = _end_panel()
    outputs = [session, chat, status, budget, card, profile, *end, user_row, agent_row, belief_panel, belief_note,
               belief_plot]  # the belief outputs last: an API client's earlier indices stay as they were

    demo.load(h.list_models, [models], [settings[0], model_note], api_name="live_models")
    gr.on([settings[0].change, settings[1].submit], h.describe_model, [models, settings[0], settings[1]],
          [model_note], api_name="live_check_model")
    gr.on([settings[0].change, settings[1].submit], h.declared_tokens, [models, settings[0], settings[1]],
          [settings[10]], api_name=False)  # the max-new-tokens slider follows the model's declared budget
    settings[2].change(h.model_fields, settings[2], model_only, api_name=False, show_progress="hidden")
    settings[3].change(h.rubric_for, [settings[3], settings[8]], [settings[8]], api_name=False)
    slot = dict(concurrency_limit=GENERATION_SLOTS, concurrency_id="live-generate", show_progress_on=[status])
    quiet = dict(show_progress="hidden")
    started = start.click(h.start, [session, root, models, *settings], outputs, api_name="live_start", **quiet)
    started.then(h.plan_template, [session], [plan], api_name=False, **quiet)
    started.then(h.play, [session, root], outputs + [stop_flag], api_name="live_play", **slot)
    go.click(h.play, [session, root], outputs + [stop_flag], api_name="live_continue", **slot)
    answered = gr.on([send.click, reply.submit], h.answer, [session, root, reply], outputs, api_name="live_answer",
                     **quiet)
    reply.input(None, [reply], [reply_count], js=COUNT_JS, api_name=False)
    answered.then(_clear_sent, [session], [reply, reply_count], api_name=False).then(
        h.play, [session, root], outputs + [stop_flag], api_name=False, **slot)
    stop.click(h.request_stop, [stop_flag], [stop_note], api_name="live_stop", **quiet)
    asked = gr.on([ask.click, question.submit], h.ask_user, [session, root, question], outputs, api_name="live_ask",
                  **quiet)
    asked.then(lambda: "", None, [question], api_name=False)
    propose.click(h.propose_plan, [session, root, plan], outputs, api_name="live_propose", **quiet)
    info.click(h.task_info, [session, root], outputs, api_name="live_info", **quiet)
    return SimpleNamespace(session=session, open_replays=open_replays)
