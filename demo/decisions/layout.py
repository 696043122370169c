"""Layout of the Decisions tab: ask a calibrated decision model, and check whether to trust it.

Only components and event wiring live here; every event calls a function of
``demo.decisions.handlers``. Nothing loads while the layout is built: the model list is read on page
load and a model loads on its first Ask. Named endpoints (``api_name``) let ``gradio_client`` users
call the same functions, including ``/score`` with System One's request and answer shapes.
"""

import gradio as gr

from core.decision.evaluation.evalsets import NATURAL, SOURCES
from core.decision.evaluation.familiarity import FAMILIAR_BELOW, THRESHOLD, TRAINED_ON
from core.decision.evaluation.reports import CONTEXTS, RESAMPLE_UNITS
from demo.decisions import handlers as h
from demo.decisions.examples import OPENING, example_names, find_example
from demo.styles import tab_style

CSS = """
.dq-error, .dq-error * { color: #b91c1c !important; font-weight: 600; }
.dq-error { background: #fef2f2 !important; border-radius: 6px; padding: 2px 8px !important; }
.dq-row { border-left: 3px solid #2563eb !important; padding-left: 8px !important; }
/* Gradio 6 gives a group's inner div its classes too: one bar */
.dq-row .dq-row { border-left: none !important; padding-left: 0 !important; }
"""
ANSWER_WIDTHS = ["15%", "4%", "12%", "8%", "8%", "6%", "7%", "7%", "6%", "14%", "13%"]
"""Answers table columns (``h.TABLE_COLUMNS``) across the tab: wide enough that no header, model name or number
breaks inside a word (Gradio 6 draws body cells as ``div.body-cell``, not ``td``) and the last column stays on screen."""
STATE_HINT = ("Plain text, or a JSON object such as {\"ticket\": \"...\", \"tier\": \"FREE\"} "
              "(shown as a record below).")
OPTIONS_HINT = ("One option per line, or key: description on every line. Score: levels low to high. "
                "Yes/no: leave empty, or true: ... / false: ... notes.")

PICKER_MIN_WIDTH = 240
"""Pixels a model picker keeps: on a phone each takes its own line, so a shipped name such as
decision-smollm2-pooled-rlcd shows whole instead of cut beside the other picker."""
PICKER_INFO = ("Pick one, or type a folder (our export or any HF chat model), a cached hub id, "
               "or a System One URL http(s)://.../v1/systemone.")

UPLOAD_HELP = """One labelled question per line (JSONL) or per row (CSV, same column names):

```json
{"state": "Card charged twice.", "question": "Which team?", "options": ["billing", "security"],
 "label": "billing", "kind": "choice", "context_id": "t1"}
```

- `state`: text, or a JSON object (CSV: text). `question`: the question text.
- `options`: a list (CSV: one cell, options separated by `|`); 2..26 distinct options.
- `label`: the correct option's text, or its 0-based index.
- `kind`: `choice` (default), `score` (options low to high) or `noul` (yes/no: options may be left
  out, label `true`/`false`; the question needs a `?`).
- `context_id` (optional): groups questions about one state; intervals resample whole contexts.

Errors name the line. At most 5,000 rows."""
PROBE_HELP = ("The known-posterior probe: synthetic triage tickets whose true posterior is known. A ticket "
              "with one department cue has one right answer (ideal mean top probability **1.0**); with two "
              "cues the evidence is split (**0.5**); the page-on-call question is right 90% of the time "
              "(**0.90**). Hollow markers are the published values for the warmup, RLCD, RLVR and oracle arms.")


def _error_line():
    return gr.Markdown(visible=False, elem_classes="dq-error")


def _question_rows(opening):
    """MAX_QUESTIONS builder rows, the ``opening`` rows filled and shown; returns groups, fields, errors, remove
    buttons."""
    groups, fields, errors, removes = [], [], [], []
    for i in range(h.MAX_QUESTIONS):
        row = opening[i] if i < len(opening) else None
        with gr.Group(visible=row is not None, elem_classes="dq-row") as group:
            with gr.Row(equal_height=True):
                kind = gr.Dropdown(h.KINDS, value=row.kind if row else "choice", label=f"q{i + 1} type", scale=1,
                                   min_width=175)  # "Score (ordered)" whole
                text = gr.Textbox(row.text if row else "", label=f"q{i + 1} question",
                                  placeholder="Which team should handle this?", scale=3)
                remove = gr.Button("✕ Remove", size="sm", scale=0, min_width=90, elem_id=f"dq-remove-{i + 1}")
            options = gr.Textbox(row.options if row else "", label=f"q{i + 1} options", lines=3,
                                 placeholder=OPTIONS_HINT)
            errors.append(_error_line())
        groups.append(group)
        fields += [kind, text, options]
        removes.append(remove)
    return groups, fields, errors, removes


def _ask_panel(models_dir: gr.State):
    opening = find_example(OPENING)
    n = gr.State(len(opening.rows))
    with gr.Row():
        with gr.Column(scale=5):
            with gr.Row(equal_height=True):
                model_a, model_b = _model_dropdowns(models_dir.value, elem_id="dq-model")
            model_note = gr.Markdown()
            model_err, model_b_err = _error_line(), _error_line()
            example = gr.Dropdown(example_names(), value=OPENING, label="Example state")
            state = gr.Textbox(opening.state, label="State", lines=6, placeholder=STATE_HINT, elem_id="dq-state")
            state_err = _error_line()
            record = gr.Dataframe(label="State as a record", visible=False, interactive=False, wrap=True)
            groups, fields, q_errors, removes = _question_rows(opening.rows)
            questions_err = _error_line()
            with gr.Row():
                add = gr.Button("+ Add question", size="sm", elem_id="dq-add")
                ask = gr.Button("Ask", variant="primary", elem_id="dq-ask")
        with gr.Column(scale=6):
            latency = gr.Markdown()
            figure = gr.Plot(label="Option probabilities (★ chosen)", elem_id="dq-answers")
    # the table spans the tab: eleven columns of model names and numbers do not fit beside the questions
    table = gr.Dataframe(label="Answers", interactive=False, wrap=True, headers=h.TABLE_COLUMNS, elem_id="dq-table",
                         elem_classes=["whole-words", "wide-table"], column_widths=ANSWER_WIDTHS)
    with gr.Accordion("Raw answers (System One shape)", open=False):
        raw = gr.JSON(show_label=False)

    model_a.change(h.model_note, [models_dir, model_a], model_note, api_name=False)
    state.change(h.state_preview, state, [state_err, record], api_name=False, show_progress="hidden")
    example.change(h.load_example, example, [state, n, *groups, *fields], api_name="load_example")
    add.click(h.add_question, n, [n, *groups], api_name=False)
    for i, remove in enumerate(removes):
        remove.click(lambda k, *v, i=i: h.remove_question(i, k, *v), [n, *fields], [n, *groups, *fields],
                     api_name=False)
    outputs = [state_err, model_err, model_b_err, questions_err, *q_errors, figure, table, latency, raw]
    ask.click(h.ask, [models_dir, model_a, model_b, state, n, *fields], outputs, api_name="ask")
    return model_a, model_b, model_note


def _model_dropdowns(models_dir: str, elem_id: str | None = None):
    """The two model pickers, filled now (the API schema lists every model) and refreshed on load; the first
    wider, so a shipped name such as decision-smollm2-pooled-rlcd shows whole."""
    labels, optional, first = h.picker_choices(models_dir)
    return (gr.Dropdown(labels, value=first, label="Decision model", scale=3, allow_custom_value=True,
                        info=PICKER_INFO, elem_id=elem_id, min_width=PICKER_MIN_WIDTH),
            gr.Dropdown(optional, value="", label="Compare with (optional)", scale=2, allow_custom_value=True,
                        min_width=PICKER_MIN_WIDTH))


def _pickers(models_dir: str):
    with gr.Row(equal_height=True):
        model_a, model_b = _model_dropdowns(models_dir)
    note = gr.Markdown()
    return model_a, model_b, note, _error_line()


def _calibration_panel(models_dir: gr.State):
    with gr.Row():
        with gr.Column(scale=4):
            model_a, model_b, note, model_err = _pickers(models_dir.value)
            source = gr.Radio(list(SOURCES), value=NATURAL, label="Evaluation set")
            contexts = gr.Slider(10, 1000, value=50, step=10,
                                 label="Contexts (test split) / tickets (natural) / tickets per kind (probe)",
                                 info="Every row runs through the model on this CPU; start small.")
            draw = gr.Number(value=0, label="Draw", elem_id="dq-draw",
                             info="Which draw of a generated set (its seed): the same held-out families, other "
                                  "tickets; 0 is the one the docs report. Another draw shows how far a figure moves.")
            upload = gr.File(label="Labelled file (.jsonl or .csv)", file_types=[".jsonl", ".json", ".csv"],
                             type="filepath", height=110, elem_id="dq-upload")
            set_err = _error_line()
            with gr.Accordion("Upload format", open=False):
                gr.Markdown(UPLOAD_HELP)
            orders = gr.Radio(list(h.CHOICE_ORDERS), value=next(iter(h.CHOICE_ORDERS)), label="Read each choice",
                              info="every cyclic order: a letter readout answers once per order of the options, the "
                                   "readings averaged: how much its answers hang on where an option stands",
                              elem_id="dq-orders")
            temperature = gr.Checkbox(label="Add temperature scaling fitted on a held-out half (post-hoc reference)")
            resample = gr.Radio(list(RESAMPLE_UNITS), value=CONTEXTS, label="Intervals resample whole",
                                info="families: the natural tickets' issue and urgency families, the unit a claim of "
                                     "transfer to unseen families is about", elem_id="dq-resample")
            run = gr.Button("Evaluate", variant="primary", elem_id="dq-evaluate")
        with gr.Column(scale=7):
            summary = gr.Markdown()
            table = gr.Dataframe(label="Metrics with 95% intervals", interactive=False, wrap=True,
                                 headers=["metric", "model", "compared with"], elem_id="dq-metrics",
                                 column_widths=["22%", "26%", "26%", "26%"],  # two models and their paired column fit
                                 max_height=720)  # every metric row on screen once the paired cells wrap
            reliability = gr.Plot(show_label=False, elem_id="dq-reliability")
            selective = gr.Plot(show_label=False, elem_id="dq-selective")
            ref_note = gr.Markdown(visible=False, elem_classes="dq-posthoc")
            ref_table = gr.Dataframe(visible=False, interactive=False, wrap=True, label="Post-hoc reference")
    model_a.change(h.model_note, [models_dir, model_a], note, api_name=False)
    upload.change(h.check_upload, upload, set_err, api_name=False)  # this file's message, no earlier one
    run.click(h.calibrate, [models_dir, model_a, model_b, source, contexts, upload, temperature, resample, draw, orders],
              [set_err, model_err, summary, table, reliability, selective, ref_note, ref_table], api_name="calibrate")
    return model_a, model_b, note


def _probe_panel(models_dir: gr.State):
    gr.Markdown(PROBE_HELP)
    model_a, model_b, note, model_err = _pickers(models_dir.value)
    tickets = gr.Slider(20, 500, value=100, step=10, label="Tickets per kind (one-cue, two-cue)")
    set_err = _error_line()
    run = gr.Button("Run probe", variant="primary", elem_id="dq-probe")
    figure = gr.Plot(show_label=False, elem_id="dq-probe-plot")
    table = gr.Dataframe(label="Mean top probability [95% interval] vs ideal and published", interactive=False,
                         headers=["probe group", "model", "ideal"], wrap=True, elem_id="dq-probe-table",
                         elem_classes=["whole-words"])  # headers wrap between words: every column on screen
    model_a.change(h.model_note, [models_dir, model_a], note, api_name=False)
    run.click(h.probe, [models_dir, model_a, model_b, tickets], [set_err, model_err, figure, table], api_name="probe")
    return model_a, model_b, note


def build(demo: gr.Blocks, models_dir: str = "") -> None:
    """Lay out the Decisions tab inside ``demo`` (call it within a ``gr.Tab``) and wire its events."""
    folder = gr.State(str(models_dir or ""))
    tab_style(CSS)
    gr.Markdown(
        "**What the models know.**\n\n"
        "- **Pooled readouts over SmolLM2-135M-Instruct** (decision-smollm2-pooled-rlcd, -warmup, -rlvr; the default "
        "when its base is installed): read support tickets written as people write them, besides the synthetic data; "
        "each answer says how far the state lies from their training states, in the body's own states (below "
        f"{FAMILIAR_BELOW:.0%} of them farther out, it warns).\n"
        "- **The ask-or-act agent's reader** (decision-smollm2-pooled-cued, the same body): reads each option after the "
        "state and its question, fitted on clarify requests only (which value a request gives each field: the beliefs "
        "the calibrated agent acts on); it was never fitted on tickets and is not measured on them.\n"
        "- **Letter arms on the same body** (decision-smollm2-warmup, -rlcd, -rlvr: a grafted attention head and LoRA "
        "on its last two layers): answer as letters, each choice read in every order of its options and averaged, so "
        "about five times slower than the pooled readouts; they read the tickets as well, answer as trained and warn "
        "as the pooled readouts do, against their own reference states.\n"
        f"- **Tiny models** (warmup, RLCD, RLVR, oracle, and the option scorer): trained on {TRAINED_ON}; they differ "
        "in objective and design, not data, and their calibration was measured on that kind of data only: each answer "
        f"says whether the state is like it (the share of its words outside the model's vocabulary; above "
        f"{THRESHOLD:.0%} it warns).\n"
        "- **The examples** below are of the synthetic kind, but two: a request to an assistant with the agent's "
        "questions (the ask-or-act agent's reader reads it), and a ticket as a person writes it, which the real-body "
        "ticket readouts read and the tiny models warn on. Asked as given, each shows the answer its data's rules give "
        "(a posterior where they do not decide) beside what the model says.",
        elem_id="dq-trained-on")
    with gr.Tabs():
        with gr.Tab("Ask", id="decisions-ask"):
            pickers = [_ask_panel(folder)]
        with gr.Tab("Calibration", id="decisions-calibration"):
            pickers.append(_calibration_panel(folder))
        with gr.Tab("Probe", id="decisions-probe"):
            pickers.append(_probe_panel(folder))
    for i, outputs in enumerate(pickers):
        demo.load(h.model_choices, folder, list(outputs), api_name="decision_models" if i == 0 else False)

    def score(model: str, state: str | dict, questions: dict) -> dict:
        """System One scoring: state + {qid: {"type", "instructions", "criteria"}}, or the whole request + {}."""
        return h.score_api(str(models_dir or ""), model, state, questions)

    gr.api(score, api_name="score")
