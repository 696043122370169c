"""Handlers of the Decisions tab: unpack UI values, make one core call, format for components.

Plain functions, testable without launching. ``models_dir`` is the folder of extra decision
exports (a ``gr.State`` string, may be empty); the question builder arrives as ``n`` (rows shown)
followed by ``MAX_QUESTIONS`` triples (type, question, options). Loaded models live in ``CACHE``,
shared read-only by every session.
"""

import json
import time

import gradio as gr
import pandas as pd

from core.decision import system_one
from core.decision.evaluation import evalsets, reports, scores
from core.decision.evaluation.familiarity import NO_SIGNAL, set_note, warning
from core.decision.model import RequestTooLong, open_decider
from core.decision.questions import render_state
from core.decision.rotation import reading_in
from core.models import availability, lists
from core.models.cache import ModelCache, pick
from core.models.entries import OPTION_DESIGN, public_deployment
from core.records import setting
from core.runs.episode_log import TOO_DEEP
from core.runs.transcripts import inert
from demo.decisions import builder, examples, plots

MAX_QUESTIONS = 6
PAIRED_COLUMN = "paired: first − second"
"""The Calibration table's last column with two models (short: the note under it names the two)."""
SPACE_EVALUATION_SECONDS = setting("CLARIFYLAB_EVALUATION_SECONDS", 300.0, least=1, whole=False)
"""On a public Space, the wall time one Evaluate (or probe) may take reading its rows: each tab event serves one
visitor at a time, so one upload of 5,000 long rows read in every order (hours on a real body) would hold everyone
else's Evaluate."""
CHOICE_ORDERS = {"as each model reads them": None, "every cyclic order (letter readouts)": "cyclic"}
"""The Calibration view's ways to read a choice (``core.decision.rotation``): a model's own, or every cyclic order of
its options with the readings averaged (a letter readout only)."""
KINDS = [("Choice", "choice"), ("Score (ordered)", "score"), ("Yes/no", "noul")]
CACHE = ModelCache(open_decider=open_decider)
TRUTH_COLUMN = "known answer"
TABLE_COLUMNS = ["model", "q", "answer", "System One confidence", "confidence from", "max p", "entropy conf.",
                 "E[level] / p(true)", "top-two gap", "input vs training", TRUTH_COLUMN]
"""System One's confidence (a letter model's: rescaled max p, 0 uniform, 1 one-hot; the option scorer's:
its confidence head), what it came from, and max p (the top probability) beside it; a score question's expected level
(0 = its first level) or a yes/no question's p(true); last, an example's known answer."""
TRUTH_NOTE = ("**known answer** (the table's last column; a dark tick on the chart): what the rules of the data this "
              "example is written like say of each answer (the last example: its author's label); an edited state or "
              "question has none.")


def _error(message: str | None) -> dict:
    """An error line next to a field (hidden when there is nothing to say)."""
    return gr.update(value=f"⚠ {inert(message)}" if message else "", visible=bool(message))


def _reason(err: ValueError) -> str:
    """An error's message for this tab: a too-long request says what is over which limit and to
    shorten it (core's truncate option is not offered here, so its hint is left out)."""
    if isinstance(err, RequestTooLong) and err.hint:
        return f"{err.reason} Shorten it: nothing is cut silently."
    return str(err)


def check_upload(upload: str | None) -> dict:
    """A new labelled file: its own error at once (or none), never the previous file's."""
    if not upload:
        return _error(None)
    try:
        evalsets.load_items(evalsets.UPLOAD, 0, upload)
    except ValueError as err:
        return _error(str(err))
    return _error(None)


def rows_of(n: int, values: tuple) -> list[builder.QuestionRow]:
    """The first ``n`` builder rows from the flat (type, question, options) values."""
    return [builder.QuestionRow(values[3 * i] or "choice", values[3 * i + 1] or "", values[3 * i + 2] or "")
            for i in range(int(n))]


def _visibility(n: int) -> list[dict]:
    return [gr.update(visible=i < n) for i in range(MAX_QUESTIONS)]


# ---- model picker


def picker_choices(models_dir: str) -> tuple[list, list, str | None]:
    """Both pickers' entries (label says when a model is unavailable) and the first usable model.

    The layout fills the pickers with these at build time, so the API schema names every model
    and ``gradio_client`` can call /ask, /calibrate and /probe without loading the page first.
    """
    found = [(e, availability.check_decision(e)) for e in lists.decision_entries(models_dir or None)]
    labels = [(e.key + (f" · {OPTION_DESIGN}" if availability.design(e, a) == OPTION_DESIGN else "")
               + ("" if a.ok else " (not available)"), e.key) for e, a in found]
    first = next((e.key for e, a in found if a.ok), found[0][0].key if found else None)
    return labels, [("(none)", "")] + labels, first


def warm_default(models_dir: str, key: str | None = None) -> str:
    """Load ``key`` (default: the model the pickers open on) before anyone asks: on a Space every restart is cold,
    and the first Ask would otherwise wait for the real body's load (15-40 s). One line for the log."""
    first = key or picker_choices(models_dir)[2]
    if first is None:
        return "Decisions: no decision model to load ahead of the first Ask"
    started = time.perf_counter()
    _, errors = pick(CACHE, models_dir or None, {"a": first})
    if "a" in errors:
        return f"Decisions: {first} not loaded ahead: {errors['a']}"
    return f"Decisions: {first} loaded ahead of the first Ask in {time.perf_counter() - started:.1f} s"


def model_choices(models_dir: str):
    """Page load: both pickers refreshed (an export added since start-up shows up) and the note."""
    labels, optional, first = picker_choices(models_dir)
    return (gr.update(choices=labels, value=first), gr.update(choices=optional, value=""),
            model_note(models_dir, first))


def model_note(models_dir: str, key: str | None) -> str:
    """The note under the picker: where the model loads from, or why it cannot and how to fix it; for a shipped model
    what it measured on committed test rows (``core.decision.evaluation.scores.measured``)."""
    try:
        entry = lists.find_decision(models_dir or None, key)
    except ValueError as err:  # a typed path or URL a public Space refuses, the words Ask gives it
        return f"⚠ {inert(str(err))}"
    if entry is None:
        return "Pick a decision model." if not key else f"⚠ unknown model {inert(repr(key))}"
    found = availability.check_decision(entry)
    where = found.message[:1].upper() + found.message[1:]  # its own sentence after the note
    figures = scores.measured(entry.key) if entry.source == "shipped" else []
    return (f"{'✓' if found.ok else '⚠ not available:'} {inert(availability.design(entry, found))} · {inert(entry.note)}. "
            f"{inert(where)}" + "".join(f"\n\nmeasured: {_figures(m)}" for m in figures))


def _figures(m: scores.Measured) -> str:
    """A committed measurement as the note shows it: accuracy and ECE on the same rows, each with its interval."""
    return (f"accuracy {m.accuracy.mean:.3f} [{m.accuracy.lo:.3f}, {m.accuracy.hi:.3f}], ECE {m.ece.mean:.3f} "
            f"[{m.ece.lo:.3f}, {m.ece.hi:.3f}] on {m.accuracy.n:,} rows, {m.rows} (`{m.source}`)")


# ---- state and question builder


def state_preview(text: str):
    """Error line and record table for the state box (a JSON object is shown as a record)."""
    try:
        state = builder.parse_state(text)
    except builder.QuestionError as err:
        return _error(str(err) if (text or "").strip() else None), gr.update(visible=False)
    rows = builder.record_rows(state)
    return _error(None), gr.update(value=pd.DataFrame(rows, columns=["field", "value"]), visible=bool(rows))


def load_example(name: str):
    """State text, rows shown, and every builder field of the example called ``name`` (no name: the picker was
    cleared, so the builder stays as it is; an unknown name is refused naming the examples)."""
    if not name:
        return [gr.update()] * (2 + 4 * MAX_QUESTIONS)
    try:
        ex = examples.find_example(name)
    except KeyError as err:
        raise gr.Error(inert(err.args[0]), print_exception=False) from None
    values: list = []
    for i in range(MAX_QUESTIONS):
        row = ex.rows[i] if i < len(ex.rows) else builder.QuestionRow("choice", "", "")
        values += [row.kind, row.text, row.options]
    n = len(ex.rows)
    return [ex.state, n, *_visibility(n), *values]


def add_question(n: int):
    """Show one more builder row (up to MAX_QUESTIONS)."""
    n = min(int(n) + 1, MAX_QUESTIONS)
    return [n, *_visibility(n)]


def remove_question(index: int, n: int, *values):
    """Drop row ``index``: later rows move up, the last shown row is cleared and hidden."""
    triples = [list(values[3 * i: 3 * i + 3]) for i in range(MAX_QUESTIONS)]
    del triples[index]
    triples.append(["choice", "", ""])
    n = max(int(n) - 1, 1)
    return [n, *_visibility(n), *[v for t in triples for v in t]]


# ---- Ask


def _familiarity(deciders: dict, state) -> dict:
    """Per model, how like its training states the state is (``state_familiarity``): our letter readouts
    and the option scorer by their training vocabulary, the pooled readout in its body's own states; a
    pipeline model or an endpoint has no such signal (absent here; the tab says so)."""
    text = render_state(state)
    found = {key: d.state_familiarity(text) for key, d in deciders.items()}
    return {key: f for key, f in found.items() if f is not None}


def _ood_cell(found) -> str:
    return NO_SIGNAL.split(":")[0] if found is None else found.cell()


def _table(result: builder.AskResult, known: dict, sources: dict, truth: dict) -> pd.DataFrame:
    """One row per answer; the last column is filled where an example's own question was asked about its own state
    (``truth``: qid -> its known posterior)."""
    out = []
    for key, answers in result.answers.items():
        for qid, ans in answers.items():
            r = builder.reading(qid, ans)
            a, conf = r.answer, r.answer.confidence
            out.append([key, qid, plots.option_label(ans, a.top) + (" ⚠ close" if r.close else ""),
                        "" if conf is None else round(conf, 3), "" if conf is None else sources[key],
                        round(a.max_p, 3), round(a.entropy_confidence, 3), "" if a.value is None else round(a.value, 3),
                        round(r.margin, 3), _ood_cell(known.get(key)), _truth_cell(truth.get(qid))])
    return pd.DataFrame(out, columns=TABLE_COLUMNS)


def _truth_cell(posterior: examples.Known | None) -> str:
    """The known answer: the option when certain, else every option it may be with its probability."""
    if not posterior:
        return ""
    possible = sorted(((p, o) for o, p in posterior.items() if p > 0), key=lambda t: -t[0])
    if len(possible) == 1:
        return possible[0][1]
    return " · ".join(f"{o} {p:.2f}" for p, o in possible)


def _latency(result: builder.AskResult) -> str:
    parts = [f"**{inert(k)}**: {1000 * s:.0f} ms " + (f"({result.usage[k]['input_tokens']} tokens, {result.usage[k]['path']} "
             "path)" if k in result.usage else "(failed)") for k, s in result.seconds.items()]
    return "Latency: " + " · ".join(parts) if parts else ""


def ask(models_dir: str, model_a: str, model_b: str, state: str, n: int, *values):
    """Ask every shown question about the state under one or two models.

    Returns: state error, model error, second-model error, builder error, one error per row, the
    answer figure, the table, the latency line and the raw System One answers.
    """
    deciders, errors = pick(CACHE, models_dir or None, {"model": model_a, "model_b": model_b})
    if not model_a:
        errors["model"] = "pick a decision model"
    rows = rows_of(n, values)
    result = builder.ask(deciders if not errors else {}, state, rows)
    result.errors.update(errors)
    for field_name, key in (("model", model_a), ("model_b", model_b)):
        if key in result.model_errors:
            result.errors.setdefault(field_name, f"{key} gave no answers: {result.model_errors[key]}")
    e = result.errors
    truth = {builder.question_id(i): k for i, k in examples.known_answers(state, rows).items()} if result.answers else {}
    fig = plots.answer_figure(result.questions, result.answers, truth) if result.answers else \
        plots.empty_figure("Fix the fields marked ⚠, then press Ask again.")
    qerr = [_error(e.get(builder.question_id(i))) for i in range(MAX_QUESTIONS)]
    known = _familiarity({k: deciders[k] for k in result.answers}, builder.parse_state(state)) if result.answers else {}
    notes = "\n\n".join(inert(warning(known.get(key), key)) for key in result.answers)
    said = TRUTH_NOTE if truth else ""
    sources = {k: d.confidence_source for k, d in deciders.items()}
    return [_error(e.get("state")), _error(e.get("model")), _error(e.get("model_b")), _error(e.get("questions")),
            *qerr, fig, _table(result, known, sources, truth),
            "\n\n".join(x for x in (notes, said, _latency(result)) if x), result.answers]


def score_api(models_dir: str, model: str, state: str | dict, questions: dict | str | None = None) -> dict:
    """The System One call for API users: ``Decider.score(state, questions)`` under ``model``.

    ``state`` may be the whole System One request (``questions`` then empty). The result is core's,
    except ``usage["path"]`` arrives as ``usage["decider_path"]``.
    """
    if not isinstance(state, (str, dict)):
        raise gr.Error(f"state must be text or a JSON object (field: value), got {type(state).__name__}",
                       print_exception=False)
    if not isinstance(model, str):
        raise gr.Error(f"model must be a picker key, a folder or a URL, got {type(model).__name__}",
                       print_exception=False)
    deciders, errors = pick(CACHE, models_dir or None, {"model": model})
    if errors or not deciders:
        raise gr.Error(errors.get("model", "pick a decision model"), print_exception=False)
    try:
        return _score(deciders, model, state, questions)
    except RecursionError:  # json and repr recurse once per bracket; a state or question is a few levels deep
        raise gr.Error(f"the state or questions are {TOO_DEEP}", print_exception=False) from None


def _score(deciders: dict, model: str, state: str | dict, questions: dict | str | None) -> dict:
    try:
        questions = json.loads(questions) if isinstance(questions, str) and questions.strip() else questions
        if not questions and isinstance(state, dict) and "questions" in state:  # the whole request
            state, questions = system_one.split_request(state, None)
        if not isinstance(questions, dict) or not questions:
            raise ValueError("questions must be a JSON object {id: {\"type\", \"instructions\", \"criteria\"}}, "
                             f"got {type(questions).__name__}")
        out = deciders[model].score(builder.parse_state(state), questions)
    except ValueError as err:  # QuestionError and RequestTooLong are ValueErrors
        raise gr.Error(_reason(err), print_exception=False) from None
    # gradio_client downloads any dict holding a string "path" as a file, so usage.path is renamed
    out["usage"]["decider_path"] = out["usage"].pop("path")
    found = _familiarity({model: deciders[model]}, builder.parse_state(state)).get(model)
    # our own models measure it (see _familiarity); any other says it has no signal
    out["familiarity"] = {**(found.record() if found else {"out_of_distribution": None}), "warning": warning(found, model)}
    return out


# ---- Calibration and Probe views


def _field_of(err: ValueError) -> str:
    """Where a failed evaluation's message goes: an endpoint's failure next to the model picker."""
    from core.decision.endpoint import EndpointError

    return "model" if isinstance(err, EndpointError) else "set"


def _models_or_errors(models_dir: str, model_a: str, model_b: str):
    deciders, errors = pick(CACHE, models_dir or None, {"model": model_a, "model_b": model_b})
    if not model_a:
        errors["model"] = "pick a decision model"
    return deciders, errors


def _reference(view: reports.CalibrationView):
    if not view.references:
        return gr.update(visible=False), gr.update(visible=False)
    notes = [f"**{r.raw.name.split(' (')[0]}**: T = {r.temperature:.2f}, fitted on {r.fit_rows} rows of other "
             f"contexts; both columns below use only the {r.raw.n} held-out rows." for r in view.references]
    head = "### Temperature scaling — a post-hoc reference, not the model's own calibration\n\n" + "\n\n".join(notes)
    table = [r for ref in view.references for r in [ref.raw, ref.scaled]]
    return (gr.update(value=head, visible=True),
            gr.update(value=pd.DataFrame(reports.metrics_rows(table), columns=["metric"] + [r.name for r in table]),
                      visible=True))


def calibrate(models_dir: str, model_a: str, model_b: str, source: str, contexts: int, upload: str | None,
              temperature: bool, resample: str = reports.CONTEXTS, draw: float | None = 0, orders: str | None = None):
    """Evaluate one or two models on a labelled set (a generated set's ``draw``: its seed), reading choices as
    ``orders`` says (``CHOICE_ORDERS``): errors (set, model), note, table, two figures, reference."""
    deciders, errors = _models_or_errors(models_dir, model_a, model_b)
    deciders = _in_orders(deciders, orders or next(iter(CHOICE_ORDERS)), errors)
    view, resample = None, resample or reports.CONTEXTS
    try:
        seed = evalsets.draw_of(draw)
        items = evalsets.load_items(source, contexts, upload, seed)
        if not errors:
            view = reports.evaluate(deciders, items, temperature=bool(temperature), resample=resample,
                                    seconds=_budget())
    except ValueError as err:  # EvalSetError, a too-long state, too few contexts for a temperature fit
        errors[_field_of(err)] = _reason(err)
    if view is None or errors:
        blank = plots.empty_figure("Fix the fields marked ⚠, then press Evaluate.")
        return [_error(errors.get("set")), _error(errors.get("model")), "", None, blank, blank,
                gr.update(visible=False), gr.update(visible=False)]
    names = [r.name for r in view.reports]
    drawn = "" if source == evalsets.UPLOAD else f", draw {seed}{' (the documented one)' if seed == 0 else ''}"
    turned = " · every choice read in each cyclic order of its options" if CHOICE_ORDERS.get(orders) else ""
    note = (f"{len(items)} rows from {inert(source)}{drawn}{turned} · {view.seconds:.1f} s · "
            f"{reports.resampling_note(items, resample)}")
    if source in (evalsets.UPLOAD, evalsets.NATURAL):  # is the set the kind of text the models were trained on?
        states = [render_state(i.state) for i in items]
        note += "".join(f"\n\n{inert(set_note(_set_familiarity(d, states), k))}" for k, d in deciders.items())
    rows = reports.metrics_rows(view.reports, view.paired)
    note += f"\n\n{marked}" if (marked := reports.outside_note(rows)) else ""
    if view.paired:
        note += (f"\n\n{PAIRED_COLUMN}: {inert(names[0])} minus {inert(names[1])} on the same rows, each bootstrap draw "
                 "shared by both, so it can exclude 0 where the two intervals overlap.")
    table = pd.DataFrame(rows, columns=["metric"] + names + ([PAIRED_COLUMN] if view.paired else []))
    return [_error(None), _error(None), note, table, plots.reliability_figure(view.reports),
            plots.selective_figure(view.reports), *_reference(view)]


def _budget() -> float | None:
    """An Evaluate's or a probe's time budget: ``SPACE_EVALUATION_SECONDS`` on a public Space, none on one's own."""
    return SPACE_EVALUATION_SECONDS if public_deployment() else None


def _in_orders(deciders: dict, orders: str, errors: dict) -> dict:
    """Each decider reading choices as ``orders`` says (copies: the cached ones stay as they are); what cannot is
    named in ``errors["model"]``."""
    if orders not in CHOICE_ORDERS:
        errors.setdefault("model", f"choice orders must be one of {list(CHOICE_ORDERS)}; got {inert(str(orders)[:40])!r}")
        return deciders
    if CHOICE_ORDERS[orders] is None:
        return deciders
    out = {}
    for name, decider in deciders.items():
        try:
            out[name] = reading_in(decider, CHOICE_ORDERS[orders])
        except ValueError as err:
            errors.setdefault("model", f"{inert(name)} cannot be read in every cyclic order: {err}")
    return out


def _set_familiarity(decider, states: list[str]) -> list | None:
    """One familiarity record per distinct state, or None for a model without the signal."""
    found = [decider.state_familiarity(s) for s in dict.fromkeys(states)]
    return None if any(f is None for f in found) else found


def probe(models_dir: str, model_a: str, model_b: str, tickets: int):
    """Known-posterior probe bars for one or two models: errors (set, model), figure, table."""
    deciders, errors = _models_or_errors(models_dir, model_a, model_b)
    summaries = []
    try:
        items = evalsets.load_items(evalsets.PROBE, tickets)
        summaries = [] if errors else reports.probe_view(deciders, items, seconds=_budget())
    except ValueError as err:
        errors[_field_of(err)] = _reason(err)
    if errors:
        return [_error(errors.get("set")), _error(errors.get("model")),
                plots.empty_figure("Fix the fields marked ⚠, then press Run probe."), None]
    cols, rows = reports.probe_rows(summaries)
    return [_error(None), _error(None), plots.probe_figure(summaries, reports.PUBLISHED_PROBE), pd.DataFrame(rows, columns=cols)]
