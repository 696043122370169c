"""Decisions tab handlers, called directly (no server): picker, builder, Ask, bad input, API."""

import re

import gradio as gr
import pytest
import torch

from core.models import entries
from demo.decisions import handlers as h
from tests.fixtures.tiny_decision import export_models

N_ERRORS = 4 + h.MAX_QUESTIONS  # state, model, model_b, builder, then one per row


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    torch.set_num_threads(1)
    return str(export_models(tmp_path_factory.mktemp("decision-models")))


def _fields(rows):
    values = []
    for i in range(h.MAX_QUESTIONS):
        values += list(rows[i]) if i < len(rows) else ["choice", "", ""]
    return values


def _errors(out) -> dict[int, str]:
    return {i: u["value"] for i, u in enumerate(out[:N_ERRORS]) if u["visible"]}


@pytest.fixture
def untrained(monkeypatch, tmp_path):
    """A checkout where the shipped decision models were not trained (an empty checkpoints folder)."""
    from core.models import entries

    monkeypatch.setattr(entries, "SHIPPED_DIR", tmp_path / "checkpoints")


def test_model_choices_list_local_and_shipped(models_dir, untrained):
    a, b, note = h.model_choices(models_dir)
    keys = [k for _, k in a["choices"]]
    assert keys[:2] == ["tiny-a", "tiny-b"] and "decision-rlcd" in keys
    assert a["value"] == "tiny-a" and b["value"] == "" and b["choices"][0] == ("(none)", "")
    assert ("decision-rlcd (not available)", "decision-rlcd") in a["choices"]  # not trained in this checkout
    assert note.startswith("✓")
    assert "not trained yet" in h.model_note(models_dir, "decision-rlcd")


def test_example_then_ask_two_models_side_by_side(models_dir):
    state, n, *rest = h.load_example("Support ticket")
    fields = rest[h.MAX_QUESTIONS:]
    assert n == 3 and [u["visible"] for u in rest[:h.MAX_QUESTIONS]] == [True] * 3 + [False] * 3
    out = h.ask(models_dir, "tiny-a", "tiny-b", state, n, *fields)
    assert _errors(out) == {}
    fig, table, latency, raw = out[N_ERRORS:]
    assert set(raw) == {"tiny-a", "tiny-b"} and list(raw["tiny-a"]) == ["q1", "q2", "q3"]
    assert len(table) == 6 and set(table["model"]) == {"tiny-a", "tiny-b"}
    bars = [t for t in fig.data if t.type == "bar"]
    assert {t.name for t in bars} == {"tiny-a", "tiny-b"} and len(bars) == 6
    assert "tiny-a" in latency and " ms" in latency
    # the tiny models' letter tokenizer holds no words, so every state is unlike their (non-)training data
    assert table["input vs training"].str.startswith("⚠ unlike it").all() and "Out of distribution" in latency
    chosen = [t for t in fig.data if t.name == "tiny-a"][0]
    star = [txt for txt in chosen.text if txt.startswith("★")]
    assert len(star) == 1  # exactly one option marked chosen per question and model
    assert "p3_low" not in raw["tiny-a"]["q2"] and "score" in raw["tiny-a"]["q2"]
    assert "p_true" in raw["tiny-a"]["q3"]
    assert list(table[h.TRUTH_COLUMN]) == ["BILLING", "P2_NORMAL", "false 0.90 · true 0.10"] * 2
    ticks = [t for t in fig.data if t.name == "known answer"]  # one a question, at every option's known probability
    assert len(ticks) == 3 and [t.showlegend for t in ticks] == [True, False, False]
    assert dict(zip(ticks[2].y, ticks[2].x)) == {"true": 0.1, "false": 0.9} and list(ticks[0].x).count(1.0) == 1
    assert [y for y, x in zip(ticks[1].y, ticks[1].x) if x] == ["1: P2_NORMAL"]  # a score's level, keyed "1"
    assert "**known answer**" in latency


def test_an_edited_example_has_no_known_answer_column(models_dir):
    state, n, *rest = h.load_example("Ambiguous ticket")
    fields = rest[h.MAX_QUESTIONS:]
    out = h.ask(models_dir, "tiny-a", "", state, n, *fields)
    assert list(out[N_ERRORS + 1][h.TRUTH_COLUMN]) == ["SECURITY 0.50 · BILLING 0.50", "false 0.90 · true 0.10"]
    out = h.ask(models_dir, "tiny-a", "", state.replace("FREE", "BUSINESS"), n, *fields)
    assert _errors(out) == {} and list(out[N_ERRORS + 1][h.TRUTH_COLUMN]) == ["", ""]
    assert all(t.type == "bar" for t in out[N_ERRORS].data)
    assert "known answer" not in out[N_ERRORS + 2]


TWENTY_SEVEN = "\n".join(f"option {i}" for i in range(27))


@pytest.mark.parametrize("state, rows, model, where, message", [
    ("ok state", [("choice", "Which?", "")], "tiny-a", 4, "0 option(s)"),                   # no options
    ("ok state", [("choice", "Which?", "just one")], "tiny-a", 4, "1 option(s)"),           # one option
    ("ok state", [("choice", "Which?", TWENTY_SEVEN)], "tiny-a", 4, "27 options"),           # 27 options
    ("ok state", [("choice", "Which?", "a"), ("choice", "Which?", "x\ny\nx")], "tiny-a", 5, "duplicates"),
    ("", [("choice", "Which?", "a\nb")], "tiny-a", 0, "the state is empty"),                  # empty state
    ("word " * 3000, [("choice", "Which?", "a\nb")], "tiny-a", 0, "this model takes at most"),  # over the limit
    ("ok state", [("choice", "Which?", "a\nb")], "decision-rlcd", 1, "not trained yet"),       # unavailable
    ("ok state", [("choice", "Which?", "a\nb")], "", 1, "pick a decision model"),             # none picked
    ("ok state", [("noul", "Page now", "")], "tiny-a", 4, "phrased as a question"),            # noul needs '?'
])
def test_bad_input_is_named_next_to_its_field(models_dir, untrained, state, rows, model, where, message):
    out = h.ask(models_dir, model, "", state, len(rows), *_fields(rows))
    errors = _errors(out)
    assert where in errors and message in errors[where], errors
    assert out[-1] == {}  # no answers shown beside an error
    # the tab keeps working: the next good request answers
    good = h.ask(models_dir, "tiny-a", "", "A customer was charged twice.", 1,
                 *_fields([("choice", "Which team?", "billing\nsecurity")]))
    assert _errors(good) == {} and set(good[-1]["tiny-a"]["q1"]["probabilities"]) == {"billing", "security"}


def test_state_preview_shows_a_record():
    err, record = h.state_preview('{"ticket": "late", "tier": 2}')
    assert not err["visible"] and record["visible"]
    assert record["value"].values.tolist() == [["ticket", "late"], ["tier", "2"]]
    err, record = h.state_preview('{"ticket": ')
    assert err["visible"] and "not valid JSON" in err["value"] and not record["visible"]
    err, record = h.state_preview("")
    assert not err["visible"]  # an empty box is not an error until Ask


def test_add_and_remove_questions_shift_rows():
    n, *vis = h.add_question(1)
    assert n == 2 and [u["visible"] for u in vis] == [True, True] + [False] * (h.MAX_QUESTIONS - 2)
    assert h.add_question(h.MAX_QUESTIONS)[0] == h.MAX_QUESTIONS
    fields = _fields([("choice", "one?", "a\nb"), ("score", "two?", "lo\nhi"), ("noul", "three?", "")])
    n, *rest = h.remove_question(1, 3, *fields)
    values = rest[h.MAX_QUESTIONS:]
    assert n == 2 and values[:6] == ["choice", "one?", "a\nb", "noul", "three?", ""]
    assert values[6:9] == ["choice", "", ""]


def test_score_api_matches_core_and_refuses_bad_input(models_dir):
    questions = {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}},
                 "lvl": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]},
                 "page": {"type": "noul", "instructions": "Page now?"}}
    out = h.score_api(models_dir, "tiny-a", {"ticket": "charged twice"}, questions)
    assert list(out["answers"]) == ["team", "lvl", "page"] and out["usage"]["questions"] == 3
    decider = h.CACHE.decider(next(e for e in h.lists.decision_entries(models_dir) if e.key == "tiny-a"))
    core = decider.score({"ticket": "charged twice"}, questions)
    core["usage"]["decider_path"] = core["usage"].pop("path")  # see score_api: gradio_client and "path"
    familiar = out.pop("familiarity")  # the one addition: how far the state is from the training data
    assert out == core
    whole = h.score_api(models_dir, "tiny-a", {"state": {"ticket": "charged twice"}, "questions": questions}, {})
    assert whole.pop("familiarity") == familiar and whole == core  # the whole System One request, same answers
    assert familiar["out_of_distribution"] and "Out of distribution for tiny-a" in familiar["warning"]
    with pytest.raises(gr.Error, match="at least 2"):
        h.score_api(models_dir, "tiny-a", "s", {"q": {"type": "choice", "instructions": "Which?", "criteria": {"a": "x"}}})
    with pytest.raises(gr.Error, match="unknown model"):
        h.score_api(models_dir, "nope", "s", questions)
    with pytest.raises(gr.Error, match="state is empty"):
        h.score_api(models_dir, "tiny-a", "  ", questions)


UPLOAD = "\n".join([
    '{"state": "Card charged twice.", "question": "Which team?", "options": ["billing", "security"], "label": "billing", "context_id": "a"}',
    '{"state": "Card charged twice.", "question": "Page someone now?", "kind": "noul", "label": "false", "context_id": "a"}',
    '{"state": "New device login.", "question": "Which team?", "options": ["billing", "security"], "label": "security"}',
    '{"state": "Refund missing.", "question": "Which team?", "options": ["billing", "security"], "label": 0}',
    '{"state": "Password reset mail.", "question": "Which team?", "options": ["billing", "security"], "label": 1}',
]) + "\n"


def test_calibrate_on_an_upload_two_models_and_temperature(models_dir, tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(UPLOAD)
    out = h.calibrate(models_dir, "tiny-a", "tiny-b", "uploaded file", 100, str(path), True)
    set_err, model_err, note, table, reliability, selective, ref_note, ref_table = out
    assert not set_err["visible"] and not model_err["visible"] and note.startswith("5 rows from uploaded file")
    paired = h.PAIRED_COLUMN
    assert list(table.columns) == ["metric", "tiny-a", "tiny-b", paired] and table["metric"][0] == "accuracy"
    assert f"{paired}: tiny-a minus tiny-b on the same rows" in note
    assert "[" in table["tiny-a"][0]  # value [lo, hi]
    assert table[paired][0].startswith(("+", "-")) and "[" in table[paired][0]  # the difference on the same rows
    assert len(reliability.data) == 7  # per model: accuracy, gap, counts; plus the diagonal
    assert {t.name.split(" (")[0] for t in selective.data} == {"tiny-a", "tiny-b"}
    assert ref_note["visible"] and "post-hoc reference" in ref_note["value"]
    assert ref_table["visible"] and any("post-hoc" in c for c in ref_table["value"].columns)
    assert "tiny-a: " in note and "tiny-b: " in note and "states" in note  # each model's out-of-distribution note


def test_calibrate_on_natural_tickets_says_how_many_states_are_unlike_the_training_data(models_dir):
    from core.decision.evaluation.evalsets import NATURAL

    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False)
    assert not set_err["visible"] and not model_err["visible"]
    assert note.startswith("30 rows from natural tickets (held-out families)")
    assert "decided by 8 issue and 4 urgency families" in note  # the first 10 test tickets already span them all
    # the tiny arms' vocabulary was fitted on synthetic tickets: people's tickets are out of distribution
    assert "tiny-a: " in note and "out of distribution" in note
    assert table["metric"][0] == "accuracy"
    assert "outside its percentile interval" not in note  # no estimate here lies outside its interval


def test_calibrate_on_natural_tickets_can_resample_whole_families(models_dir):
    from core.decision.evaluation.evalsets import NATURAL

    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False, "families")
    assert not set_err["visible"] and not model_err["visible"]
    assert "95% intervals resample whole families: the 8 issue and 4 urgency families" in note
    assert list(table.iloc[-1]) == ["rows (families resampled)", "30"]
    set_err, _, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False, "tickets")
    assert set_err["visible"] and "intervals resample whole contexts or families; got 'tickets'" in set_err["value"]
    assert table is None  # nothing ran, nothing shown as if it had


def test_calibrate_on_a_public_space_stops_at_its_time_budget_and_the_tab_keeps_serving(models_dir, monkeypatch):
    from core.decision.evaluation.evalsets import NATURAL

    monkeypatch.setattr(h, "SPACE_EVALUATION_SECONDS", 0.0)
    assert not h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False)[0]["visible"]  # one's own: no budget
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False)
    assert set_err["visible"] and "tiny-a: stopped at context 0 of 10" in set_err["value"] and table is None
    set_err, _, figure, table = h.probe(models_dir, "tiny-a", "", 20)
    assert set_err["visible"] and "time budget" in set_err["value"] and table is None
    monkeypatch.setattr(h, "SPACE_EVALUATION_SECONDS", 300.0)
    assert not h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False)[0]["visible"]


@pytest.mark.parametrize("size", [0, 1001, 2.5, "ten", None, float("nan"), True])
def test_a_generated_set_of_a_size_the_slider_cannot_give_is_refused(models_dir, size):
    from core.decision.evaluation.evalsets import NATURAL

    set_err, _, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, size, None, False)
    assert set_err["visible"] and "the set's size must be a whole number from 1 to 1000" in set_err["value"]
    assert table is None


def test_calibrate_reads_another_draw_of_the_natural_tickets(models_dir):
    from core.decision.evaluation.evalsets import NATURAL

    first = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False)
    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False, "contexts", 1)
    assert not set_err["visible"] and not model_err["visible"]
    assert first[2].startswith("30 rows from natural tickets (held-out families), draw 0 (the documented one)")
    assert note.startswith("30 rows from natural tickets (held-out families), draw 1 · ")
    assert re.search(r"decided by \d issue and \d urgency families", note)  # other tickets, held-out families
    assert not table.equals(first[3])
    set_err, _, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", NATURAL, 10, None, False, "contexts", 2.5)
    assert set_err["visible"] and "draw must be a whole number from 0 to 9999; got '2.5'" in set_err["value"]
    assert table is None  # nothing ran, nothing shown as if it had


@pytest.mark.parametrize("text, message", [
    ('{"state": "s", "question": "Which?", "options": ["a", "b"], "label": "c"}\n', "line 1: label 'c' is not one of"),
    ('{"state": "s", "question": "Which?", "options": ["a", "b"], "label": "a"}\n{oops\n', "line 2: not JSON"),
    ('{"state": "s", "question": "Which?", "options": ["a"], "label": "a"}\n', "line 1: question 'Which?': 1 option(s)"),
])
def test_bad_upload_is_named_next_to_the_upload(models_dir, tmp_path, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    out = h.calibrate(models_dir, "tiny-a", "", "uploaded file", 100, str(path), False)
    assert out[0]["visible"] and message in out[0]["value"] and out[3] is None
    good = tmp_path / "good.jsonl"
    good.write_text(UPLOAD)
    assert not h.calibrate(models_dir, "tiny-a", "", "uploaded file", 100, str(good), False)[0]["visible"]


@pytest.mark.parametrize("data, message", [
    (b'{"state": ' + b"[" * 100_000 + b"\n", "line 1: nested too deeply"),   # 100,000 brackets
    (b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "is not UTF-8 text"),                 # binary
])
def test_nested_and_binary_uploads_get_a_message_naming_the_file_only(models_dir, tmp_path, data, message):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(data)
    shown = h.check_upload(str(path))  # on upload, before Evaluate
    assert shown["visible"] and message in shown["value"] and str(tmp_path) not in shown["value"]
    out = h.calibrate(models_dir, "tiny-a", "", "uploaded file", 100, str(path), False)
    assert out[0]["visible"] and message in out[0]["value"] and str(tmp_path) not in out[0]["value"]
    good = tmp_path / "good.jsonl"
    good.write_text(UPLOAD)
    assert not h.check_upload(str(good))["visible"]  # the next file shows its own (empty) message


def test_upload_with_a_byte_order_mark_or_over_the_limit(models_dir, tmp_path):
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + UPLOAD.encode())
    out = h.calibrate(models_dir, "tiny-a", "", "uploaded file", 100, str(bom), False)
    assert not out[0]["visible"] and out[2].startswith("5 rows")
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as f:
        f.truncate(30 * 2**20)
    shown = h.check_upload(str(huge))
    assert shown["visible"] and "limited to 20 MB" in shown["value"]


def test_calibrate_refuses_an_unavailable_model(models_dir, untrained, tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(UPLOAD)
    out = h.calibrate(models_dir, "decision-oracle", "", "uploaded file", 100, str(path), False)
    assert out[1]["visible"] and "not trained yet" in out[1]["value"]


def test_probe_bars_against_ideals(models_dir):
    set_err, model_err, fig, table = h.probe(models_dir, "tiny-a", "tiny-b", 20)
    assert not set_err["visible"] and not model_err["visible"]
    assert list(table["group"]) == ["one-cue department", "two-cue department", "escalate"]
    assert list(table["ideal"]) == [1.0, 0.5, 0.9] and "published RLCD" in table.columns
    assert {"tiny-a", "tiny-b", "ideal"} <= {t.name for t in fig.data}


def test_the_tab_imports_without_torch():
    import subprocess
    import sys

    code = ("import sys, gradio, demo.decisions.layout\n"
            "print([m for m in ('torch', 'transformers') if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # torch loads with the first model, not at app start-up


def _refused_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/systemone"  # nothing listens there once the socket is closed


def test_a_chat_model_folder_is_offered_and_asked_through_the_pipeline(tmp_path_factory):
    from tests.fixtures.tiny_chat import build_tiny_chat

    root = export_models(tmp_path_factory.mktemp("mixed"), names=("tiny-a",))
    build_tiny_chat(root / "chat")
    a, _, _ = h.model_choices(str(root))
    assert [k for _, k in a["choices"]][:2] == ["chat", "tiny-a"]
    assert "DecisionPipeline" in h.model_note(str(root), "chat")
    out = h.ask(str(root), "tiny-a", "chat", "charged twice", 1, *_fields([("choice", "Which team?", "billing\nsecurity")]))
    assert _errors(out) == {}
    table, latency = out[N_ERRORS + 1], out[N_ERRORS + 2]
    assert set(table["model"]) == {"tiny-a", "chat"} and "pipeline path" in latency
    assert {"System One confidence", "max p"} <= set(table.columns)


def test_a_typed_system_one_url_that_refuses_is_said_plainly_and_the_tab_keeps_working(models_dir):
    url = _refused_url()
    assert "System One endpoint" in h.model_note(models_dir, url)
    fields = _fields([("choice", "Which team?", "billing\nsecurity")])
    out = h.ask(models_dir, "tiny-a", url, "charged twice", 1, *fields)
    errors = _errors(out)
    assert list(errors) == [2] and "refused the connection" in errors[2]  # next to the second picker
    assert "(failed)" in out[N_ERRORS + 2] and set(out[N_ERRORS + 1]["model"]) == {"tiny-a"}
    assert _errors(h.ask(models_dir, "tiny-a", "", "charged twice", 1, *fields)) == {}
    bad = _errors(h.ask(models_dir, "ftp://x/v1/systemone", "", "s", 1, *fields))
    assert "unknown model" in bad[1]
    from core.decision.evaluation.evalsets import SOURCES

    out = h.calibrate(models_dir, url, "", SOURCES[0], 2, None, False)
    assert not out[0]["visible"] and "refused the connection" in out[1]["value"]  # next to the picker
    out = h.probe(models_dir, url, "", 5)
    assert not out[0]["visible"] and "refused the connection" in out[1]["value"]


def test_error_lines_show_text_not_markup():
    shown = h._error("<img src=x onerror=alert(1)> [click](http://evil) *bold*")["value"]
    assert "<img" not in shown and "\\[click\\]" in shown and "\\*bold\\*" in shown


def test_calibration_and_probe_of_an_endpoint_equal_the_same_model_asked_locally(models_dir):
    from core.decision.evaluation.evalsets import SOURCES
    from tests.fixtures.system_one_server import Server

    local = h.CACHE.decider(next(e for e in h.lists.decision_entries(models_dir) if e.key == "tiny-a"))
    srv = Server(local)  # a real HTTP server answering from the same model
    try:
        out = h.calibrate(models_dir, "tiny-a", srv.url, SOURCES[0], 4, None, False)
        assert not out[0]["visible"] and not out[1]["visible"]
        table = out[3]
        assert list(table.columns) == ["metric", "tiny-a", srv.url, h.PAIRED_COLUMN]
        assert list(table["tiny-a"]) == list(table[srv.url])  # same probabilities, same report
        assert table.iloc[0, 3] == "+0.000 [+0.000, +0.000]"  # and no difference on any draw
        probe = h.probe(models_dir, "tiny-a", srv.url, 20)
        cols = list(probe[3].columns)
        assert probe[3][cols[2]].tolist() == probe[3][cols[3]].tolist()
    finally:
        srv.httpd.shutdown()


def test_calibrate_reads_every_choice_in_each_cyclic_order_without_changing_the_cached_model(models_dir):
    from core.decision.evaluation.evalsets import SPLIT as TEST

    every = list(h.CHOICE_ORDERS)[1]
    given = h.calibrate(models_dir, "tiny-a", "", TEST, 10, None, False)
    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", TEST, 10, None, False, "contexts", 0, every)
    assert not set_err["visible"] and not model_err["visible"]
    assert " · every choice read in each cyclic order of its options · " in note and "cyclic" not in given[2]
    assert not table.equals(given[3])  # the tiny arm's choices read otherwise
    cached = h.CACHE.decider(next(e for e in h.lists.decision_entries(models_dir) if e.key == "tiny-a"))
    assert cached.choice_orders == "given"  # the copy read them; the model every visitor shares is unchanged
    again = h.calibrate(models_dir, "tiny-a", "", TEST, 10, None, False)
    assert again[3].equals(given[3])
    set_err, model_err, note, table, *_ = h.calibrate(models_dir, "tiny-a", "", TEST, 10, None, False, "contexts", 0,
                                                      "<b>sideways</b>")
    assert model_err["visible"] and "choice orders must be one of" in model_err["value"] and "<b>" not in model_err["value"]
    assert table is None


def test_calibrate_names_a_model_that_reads_a_choice_one_way_only():
    from core.decision.evaluation.evalsets import SPLIT as TEST
    from core.models.entries import SHIPPED_OPTION_SCORERS

    scorer = SHIPPED_OPTION_SCORERS[0][0]
    _, model_err, _, table, *_ = h.calibrate("", scorer, "", TEST, 10, None, False, "contexts", 0,
                                             list(h.CHOICE_ORDERS)[1])
    assert model_err["visible"] and f"{scorer} cannot be read in every cyclic order: it reads a choice one way only" \
        in model_err["value"] and table is None


def test_warming_loads_the_default_once_and_says_why_it_could_not(monkeypatch, tmp_path):
    note = h.warm_default("")
    assert note.startswith("Decisions: decision-smollm2-pooled-rlcd loaded ahead of the first Ask in ")
    before = dict(h.CACHE._models)
    assert h.pick(h.CACHE, None, {"a": "decision-smollm2-pooled-rlcd"})[1] == {} and h.CACHE._models == before
    assert h.warm_default("", "no-such-model").startswith("Decisions: no-such-model not loaded ahead: unknown model")
    monkeypatch.setattr(entries, "SHIPPED_DIR", tmp_path)  # nothing shipped: the packaged base through the pipeline
    assert h.warm_default("").startswith("Decisions: SmolLM2-135M-Instruct loaded ahead")


@pytest.mark.parametrize("typed", ["../../../etc", "/etc", ".", "http://127.0.0.1:9/v1/systemone"])
def test_the_note_on_a_public_space_refuses_a_typed_path_or_url_in_words(models_dir, monkeypatch, typed):
    """The picker's note runs on every change: on a Space it gives the refusal Ask gives, never an exception."""
    monkeypatch.setenv("SPACE_ID", "someone/clarifylab")
    monkeypatch.delenv("CLARIFYLAB_ALLOW_URLS", raising=False)
    note = h.model_note(models_dir, typed)
    assert note.startswith("⚠ on this public Space")


def test_an_api_caller_gets_words_for_a_model_or_example_that_is_no_name(models_dir):
    with pytest.raises(gr.Error, match="model must be a picker key, a folder or a URL, got int"):
        h.score_api(models_dir, 5, "a ticket", {"q": {"type": "noul", "instructions": "Page now?"}})
    with pytest.raises(gr.Error, match="no example called 'Tomorrow'; examples: "):
        h.load_example("Tomorrow")
    cleared = h.load_example(None)  # the picker cleared: every builder field stays as it is
    assert len(cleared) == 2 + 4 * h.MAX_QUESTIONS and all(u == gr.update() for u in cleared)

