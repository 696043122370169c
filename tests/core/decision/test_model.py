"""Every kind of decision model implements ``DecisionModel`` and opens through the one table of kinds."""

import pytest

from core.decision import system_one
from core.decision.evaluation.familiarity import EmbeddingFamiliarity, Familiarity
from core.decision.model import (
    ADAPTER_DESIGN,
    ENDPOINT_DESIGN,
    HEAD_SOURCE,
    KINDS,
    LETTER_DESIGN,
    MAX_P_SOURCE,
    PIPELINE_DESIGN,
    POOLED_DESIGN,
    REPORTED_SOURCE,
    DecisionModel,
    load_model,
    question_limit,
    run_models,
)
from core.decision.option.decider import OptionDecider
from core.decision.pooled import PooledHead
from core.decision.option.model import OptionModel
from core.decision.option.scorer import OptionScorer
from core.decision.random_model import random_body
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, export_tiny_arm, save_tiny_pooled
from tests.fixtures.tiny_chat import build_tiny_chat
from tests.fixtures.tiny_decision import export_tiny

SPECS = {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"BIL": "billing", "SEC": "security"}}}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory, letter_tok) -> dict:
    """One real tiny model of every kind, opened through ``load_model`` where a folder exists."""
    root = tmp_path_factory.mktemp("kinds")
    body = random_body(len(letter_tok), seed=3, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)
    base = build_tiny_llama(root / "base")
    pooled = save_tiny_pooled(root / "pooled", base, PooledHead(32))
    return {
        LETTER_DESIGN: load_model(LETTER_DESIGN, export_tiny(root / "letter"), "tiny-letter"),
        ADAPTER_DESIGN: load_model(ADAPTER_DESIGN, export_tiny_arm(root / "arm", base), "tiny-arm"),
        POOLED_DESIGN: load_model(POOLED_DESIGN, pooled, "tiny-pooled"),
        "option": OptionDecider(OptionScorer(OptionModel(body, head_hidden=16), letter_tok), "tiny-option"),
        PIPELINE_DESIGN: load_model(PIPELINE_DESIGN, build_tiny_chat(root / "chat"), "tiny-chat"),
        ENDPOINT_DESIGN: load_model(ENDPOINT_DESIGN, "http://127.0.0.1:9/v1/systemone", "url"),  # never called
    }


def test_every_kind_implements_the_protocol(kinds):
    for model in kinds.values():
        assert isinstance(model, DecisionModel), type(model).__name__
        assert model.design in KINDS and model.max_options >= 26
    assert {m.design for m in kinds.values()} == set(KINDS)  # one row per kind, every row used


@pytest.mark.parametrize("kind, source, signal", [
    (LETTER_DESIGN, MAX_P_SOURCE, Familiarity),       # our letter readout: rescaled max p, its own tokenizer
    (ADAPTER_DESIGN, MAX_P_SOURCE, type(None)),       # a LoRA arm over a real base: its web vocabulary is no signal
    (POOLED_DESIGN, MAX_P_SOURCE, EmbeddingFamiliarity),  # a head over a frozen real base: its body's states
    ("option", HEAD_SOURCE, Familiarity),             # the option scorer: its head, decision-rlcd's tokenizer
    (PIPELINE_DESIGN, MAX_P_SOURCE, type(None)),      # any chat model: System One's rescaled max p, no signal
    (ENDPOINT_DESIGN, REPORTED_SOURCE, type(None)),   # a URL: whatever it reports
])
def test_each_kind_declares_what_it_is(kinds, kind, source, signal):
    model = kinds[kind]
    assert model.confidence_source == source
    assert type(model.state_familiarity("Ticket 7: my card was charged twice.")) is signal


def test_load_model_names_the_model_and_refuses_an_unknown_design(kinds, tmp_path):
    assert kinds[LETTER_DESIGN].name == "tiny-letter" and kinds[PIPELINE_DESIGN].name == "tiny-chat"
    with pytest.raises(ValueError, match="unknown decision-model design 'abacus'"):
        load_model("abacus", tmp_path, "x")


def test_question_limit_is_the_option_scorers_only_when_every_model_is_one(kinds):
    assert question_limit({"o": kinds["option"]}) == 255
    assert question_limit({"o": kinds["option"], "l": kinds[LETTER_DESIGN]}) is None
    assert question_limit({}) is None


def test_run_models_keeps_a_failure_next_to_its_model(kinds):
    asked = system_one.ParsedQuestions(SPECS, system_one.questions(SPECS))
    runs = run_models({"ok": kinds[LETTER_DESIGN], "down": kinds[ENDPOINT_DESIGN]}, "Card charged twice.", asked)
    assert list(runs["ok"].answers) == ["team"] and not runs["ok"].error and runs["ok"].seconds > 0
    assert not runs["down"].answers and "127.0.0.1:9" in runs["down"].error


def test_the_typed_answer_reads_a_system_one_answer(kinds):
    wire = kinds[LETTER_DESIGN].score("Card charged twice.", SPECS)["answers"]["team"]
    ans = system_one.SystemOneAnswer.of("team", wire)
    assert ans.top == wire["choice"] and ans.max_p == wire["max_p"] and ans.confidence == wire["confidence"]
    assert sum(ans.probabilities.values()) == pytest.approx(1.0) and 0 <= ans.margin <= 1
    with pytest.raises(ValueError, match="extra"):  # extra="forbid": a misspelt field is an error
        system_one.SystemOneAnswer(**ans.model_dump(), maxp=0.5)
