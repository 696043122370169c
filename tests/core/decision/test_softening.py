"""core.decision.softening: nearness and temperature exactly, the file's round trip and refusals, and a softened
adapter arm whose every answer is the arm's as trained at temperature T, through our Decider and transformers'
pipeline alike."""

import json
import math

import pytest
import torch

from core.decision import system_one
from core.decision.export.adapter import (SOFTENING_FILE, DecisionExportError, load_adapter_decider, read_adapter_card,
                                          soften_adapter_arm)
from core.decision.prompt import encode, encode_prefix, header_tokens, render_prefix
from core.decision.questions import Choice
from core.decision.evaluation.familiarity import EmbeddingFamiliarity
from core.decision.softening import (NEAREST, SOFTEN_AT, WARN_PERCENTILE, Softening, SofteningError, StateTemperature,
                                     distance_quantiles, familiarity_of, nearness_of, temperature_of)
from core.models.layers import first_layers
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, export_tiny_arm

TICKET = "My card was charged twice for one invoice."
REQUEST = {"state": TICKET, "questions": {
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": None, "security": None, "infra": None}},
    "page": {"type": "noul", "instructions": "Page on-call now?"}}}


def test_nearness_is_the_mean_cosine_to_the_nearest_neighbours():
    torch.manual_seed(0)
    neighbours = torch.nn.functional.normalize(torch.randn(9, 4), dim=-1)
    unit = torch.nn.functional.normalize(torch.randn(2, 4), dim=-1)
    for i in range(2):
        cosines = sorted((float(unit[i] @ n) for n in neighbours), reverse=True)
        assert nearness_of(unit, neighbours)[i].item() == pytest.approx(sum(cosines[:NEAREST]) / NEAREST, abs=1e-6)
    assert nearness_of(unit, neighbours[:2])[0].item() == pytest.approx(float((unit[0] @ neighbours[:2].T).mean()), abs=1e-6)
    assert nearness_of(unit, torch.zeros(0, 4)).tolist() == [1.0, 1.0]  # no reference: nothing to be far from
    assert temperature_of(torch.tensor([0.5]), torch.tensor([0.3, -2.0])).item() == pytest.approx(
        math.exp(0.3 - 2.0 * (0.5 - SOFTEN_AT)))


def test_familiarity_is_the_share_of_reference_distances_beyond_the_state():
    z = torch.tensor([[float(i)] for i in range(11)])  # squared distances 0, 1, 4, ..., 100
    familiar = distance_quantiles(z)
    assert familiar.tolist() == pytest.approx(torch.quantile(z.pow(2).squeeze(-1), torch.linspace(0, 1, 101)).tolist())
    assert familiar[0] == 0 and familiar[50] == 25 and familiar[100] == 100
    # the share of the 101 percentiles at or beyond d: at the centre all, at the median 51, beyond them all none
    assert familiarity_of(torch.tensor([[0.0], [5.0], [11.0]]), familiar).tolist() == pytest.approx(
        [1.0, 51 / 101, 0.0])


def test_a_softening_warns_below_the_val_states_fifth_percentile():
    torch.manual_seed(2)
    reference, val = torch.randn(40, 5), torch.randn(30, 5) * 1.5
    soft = Softening.of_states(2, reference, val=val)
    z = (reference - reference.mean(0)) / reference.std(0)
    assert torch.allclose(soft.familiar, distance_quantiles(z))
    assert soft.warn_below.item() == pytest.approx(torch.quantile(soft.familiarity(val), WARN_PERCENTILE / 100).item())
    assert (soft.familiarity(val) < soft.warn_below).float().mean() <= WARN_PERCENTILE / 100
    assert Softening.of_states(2, reference).warn_below.item() == 0.0  # no val states: it never warns


def test_a_softening_standardises_by_its_reference_and_round_trips(tmp_path):
    torch.manual_seed(1)
    states = torch.randn(12, 6) * 3 + 1
    soft = Softening.of_states(3, states, (0.2, -1.5))
    z = (states - states.mean(0)) / states.std(0)
    assert torch.allclose(soft.neighbours, torch.nn.functional.normalize(z, dim=-1), atol=1e-5)
    assert soft.nearness(states[:1]).item() <= 1 + 1e-6 and soft.nearness(states[:1]) > soft.nearness(-states[:1])
    soft.save(tmp_path / "s.safetensors")
    back = Softening.load(tmp_path / "s.safetensors", 6)
    assert back.layer == 3 and torch.equal(back.temperature(states), soft.temperature(states))
    assert torch.equal(back.familiarity(states), soft.familiarity(states)) and torch.equal(back.warn_below, soft.warn_below)


def test_a_broken_softening_file_is_refused_naming_what_is_wrong(tmp_path):
    soft = Softening.of_states(2, torch.randn(7, 6))
    soft.save(tmp_path / "s.safetensors")
    with pytest.raises(SofteningError, match="state_mean has shape"):
        Softening.load(tmp_path / "s.safetensors", 8)  # another body's width
    with torch.no_grad():
        soft.ab.fill_(float("nan"))
    soft.save(tmp_path / "nan.safetensors")
    with pytest.raises(SofteningError, match="non-finite"):
        Softening.load(tmp_path / "nan.safetensors", 6)
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(SofteningError, match="junk.safetensors cannot be read"):
        Softening.load(tmp_path / "junk.safetensors", 6)


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """A tiny arm as trained, and its copy softened at layer 2 (below its adapted layers 2 and 3: the input of
    layer 2 is the output of the unadapted layers 0 and 1)."""
    root = tmp_path_factory.mktemp("soft")
    base = build_tiny_llama(root / "base")
    arm = export_tiny_arm(root / "arm", base)
    plain = load_adapter_decider(arm)
    reference = StateTemperature(plain.body, plain.tokenizer, Softening(2, 32, 0)).states(
        [encode_prefix(plain.tokenizer, render_prefix(t)) for t in ("A login failed.", "The site is down.", "Refund me.",
                                                                    "Server unreachable.", "Password reset.", "Invoice?")])
    soft = soften_adapter_arm(arm, root / "soft", Softening.of_states(2, reference, (0.4, -3.0), val=reference),
                              {"a": 0.4, "b": -3.0})
    return arm, soft


def test_a_softened_arm_answers_as_trained_at_its_states_temperature(arms):
    arm, soft = arms
    plain, softened = load_adapter_decider(arm), load_adapter_decider(soft)
    question = Choice("Which team?", ("billing", "security", "infra"))
    ids = encode_prefix(plain.tokenizer, render_prefix(TICKET))
    lower = first_layers(plain.body, 2)
    with torch.no_grad():
        hidden = lower(input_ids=torch.tensor([ids]), use_cache=False).last_hidden_state[0]
    state = hidden[header_tokens(plain.tokenizer):].mean(0, keepdim=True)  # the header left out
    t = Softening.load(soft / SOFTENING_FILE, 32).temperature(state).item()
    assert softened.temperature(ids) == pytest.approx(t, rel=1e-5) and t != pytest.approx(1.0)
    p = torch.tensor(list(plain.decide(TICKET, [question])[0].probs.values()))
    expected = torch.softmax(p.log() / t, -1)
    got = list(softened.decide(TICKET, [question])[0].probs.values())
    assert got == pytest.approx(expected.tolist(), abs=1e-5)
    assert header_tokens(plain.tokenizer) == len(encode(plain.tokenizer, "User: Context:"))


def test_every_path_softens_alike_and_the_fast_paths_read_the_states_on_the_way(arms, monkeypatch):
    softened = load_adapter_decider(arms[1])
    questions = [Choice("Which team?", ("billing", "security", "infra")), Choice("Urgent?", ("yes", "no"))]
    req = softened.tokenize(TICKET, questions)
    by_path = {path: softened.probabilities(req, path=path) for path in ("reference", "shared", "packed")}
    for path in ("shared", "packed"):
        assert torch.allclose(by_path[path], by_path["reference"], atol=1e-5)
    own_pass = []
    monkeypatch.setattr(softened.temperature, "states", lambda *a: own_pass.append(1) or 1 / 0)
    for path in ("shared", "packed"):  # each reads the prefix's states in its own first pass
        assert torch.allclose(softened.probabilities(req, path=path), by_path["reference"], atol=1e-5) and not own_pass


def test_a_softened_arm_tells_its_familiarity_without_reading_an_answered_state_again(arms, monkeypatch):
    plain, softened = load_adapter_decider(arms[0]), load_adapter_decider(arms[1])
    assert plain.state_familiarity(TICKET) is None  # an arm as trained has no reference: no signal
    found = softened.state_familiarity(TICKET)
    soft = softened.temperature.softening
    state = softened.temperature.states([softened._prefix(TICKET)])
    assert isinstance(found, EmbeddingFamiliarity) and found.threshold == soft.warn_below.item() > 0
    assert found.share == pytest.approx(soft.familiarity(state).item())
    other = "A different state entirely, about nothing the reference holds: 42 / 7 = 6."
    reads = []
    real = softened.temperature.states
    monkeypatch.setattr(softened.temperature, "states", lambda *a: reads.append(1) or real(*a))
    for path in ("reference", "shared", "packed"):  # the answer's own read of the state is kept
        softened.probabilities(softened.tokenize(other, [Choice("Urgent?", ("yes", "no"))]), path=path)
        before = len(reads)
        assert softened.state_familiarity(other).share == pytest.approx(
            soft.familiarity(real([softened._prefix(other)])).item(), abs=1e-5)
        assert len(reads) == before


def test_a_softened_arm_answers_through_the_pipeline_as_its_decider(arms):
    from transformers import pipeline

    import core.decision.auto_model  # noqa: F401  (registers our exports as decision models)

    ours = load_adapter_decider(arms[1]).score(REQUEST)["answers"]
    theirs = pipeline("decision", model=str(arms[1]))(REQUEST)
    assert list(theirs) == list(ours) == list(REQUEST["questions"])  # every question answered, none left out
    for name, answer in theirs.items():
        assert system_one.probabilities_of(answer) == pytest.approx(system_one.probabilities_of(ours[name]), abs=1e-5)
    plain = load_adapter_decider(arms[0]).score(REQUEST)["answers"]
    assert system_one.probabilities_of(plain["team"]) != pytest.approx(system_one.probabilities_of(ours["team"]), abs=1e-3)


def test_the_card_hashes_the_softening_and_refuses_what_cannot_hold(arms, tmp_path):
    arm, soft = arms
    card = read_adapter_card(soft)
    assert card.softening_layer == 2 and SOFTENING_FILE in card.sha256 and card.training["softening"]["a"] == 0.4
    with pytest.raises(DecisionExportError, match="softened already"):
        soften_adapter_arm(soft, tmp_path / "twice", Softening.of_states(2, torch.randn(6, 32)), {})
    with pytest.raises(DecisionExportError, match="would read states the adapter changes"):
        soften_adapter_arm(arm, tmp_path / "high", Softening.of_states(3, torch.randn(6, 32)), {})
    import shutil

    tampered = shutil.copytree(soft, tmp_path / "tampered")
    data = (tampered / SOFTENING_FILE).read_bytes()
    (tampered / SOFTENING_FILE).write_bytes(data[:-4] + bytes(b ^ 0xFF for b in data[-4:]))  # one value changed
    with pytest.raises(DecisionExportError, match="softening.safetensors: sha256 does not match"):
        load_adapter_decider(tampered)
    dropped = shutil.copytree(soft, tmp_path / "dropped")
    record = json.loads((dropped / "decision.json").read_text())
    record["sha256"].pop(SOFTENING_FILE)
    (dropped / "decision.json").write_text(json.dumps(record))
    with pytest.raises(DecisionExportError, match="records no sha256 for softening.safetensors"):
        load_adapter_decider(dropped)
