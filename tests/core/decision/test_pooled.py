"""The pooled readout: the head's math, the reader's means, the decider's answers, the folder's checks."""

import json

import pytest
import torch
from transformers import Qwen3ForCausalLM

from core.decision import Choice, Noul, Score
from core.decision import pooled as P
from core.decision.prompt import encode, encode_prefix, render_prefix
from core.decision.random_model import body_config
from core.decision.softening import NEAREST, SOFTEN_AT
from core.models.layers import first_layers
from tests.fixtures.tiny_adapter_arm import build_tiny_llama, save_tiny_pooled

QS = [Choice("Which team?", ["billing", "security", "infra"]), Score("How urgent?", ["low", "mid", "high"]),
      Noul("Page now?")]
STATE = "The invoice was charged twice and login fails."


@pytest.fixture(scope="module")
def lm(letter_tok):
    torch.manual_seed(5)
    return Qwen3ForCausalLM(body_config(len(letter_tok), hidden=32, layers=3, heads=4, kv_heads=2, head_dim=8)).eval()


def _head(hidden=32, seed=0):
    torch.manual_seed(seed)
    head = P.PooledHead(hidden)
    with torch.no_grad():
        for t in (head.m, head.w, head.state_mean):
            t.normal_()
        head.state_scale.uniform_(0.5, 2.0); head.option_scale.uniform_(0.5, 2.0)
        head.familiar.copy_(torch.linspace(0.0, 5.0, 101))
    return head.eval()


def test_head_logits_are_the_bilinear_form_over_centred_options_and_mask_undeclared_ones():
    head = _head()
    s, o = torch.randn(2, 32), torch.randn(2, 3, 32)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    got = head(s, o, mask)
    for b in range(2):
        zs = (s[b] - head.state_mean) / head.state_scale
        shared = o[b, mask[b]].mean(0)
        for k in range(3):
            zo = (o[b, k] - shared) / head.option_scale
            want = zs @ head.m @ zo + zo @ head.w
            if mask[b, k]:
                assert torch.allclose(got[b, k], want, atol=1e-4)
            else:
                assert got[b, k] == float("-inf")


def test_a_head_with_neighbours_divides_its_logits_by_the_softening_of_the_states_nearness():
    head = _head()
    s, o, mask = torch.randn(3, 32), torch.randn(3, 3, 32), torch.ones(3, 3, dtype=torch.bool)
    as_trained = head(s, o, mask)
    assert torch.equal(head.temperature(s), torch.ones(3))  # no neighbours: as trained
    train = torch.randn(7, 32)
    head.neighbours = head.unit_states(train)
    head.softening.copy_(torch.tensor([0.4, -3.0]))
    unit = lambda x: ((x - head.state_mean) / head.state_scale) / ((x - head.state_mean) / head.state_scale).norm()  # noqa: E731
    for b in range(3):
        cosines = sorted((float(unit(s[b]) @ unit(t)) for t in train), reverse=True)
        nearness = sum(cosines[: NEAREST]) / NEAREST
        t = torch.exp(torch.tensor(0.4 - 3.0 * (nearness - SOFTEN_AT)))
        assert head.nearness(s[b:b + 1]).item() == pytest.approx(nearness, abs=1e-5)
        assert torch.allclose(head(s[b:b + 1], o[b:b + 1], mask[b:b + 1])[0], as_trained[b] / t, atol=1e-4)
    assert head.nearness(train[:1]).item() <= 1.0 + 1e-6 and head.nearness(train[:1]) > head.nearness(-train[:1])
    near = head.nearness(s)  # a caller that measured nearness (or T) already gets the same T and logits
    assert torch.equal(head.temperature(s, near), head.temperature(s))
    assert torch.equal(head(s, o, mask, head.temperature(s, near)), head(s, o, mask))
    assert not torch.allclose(head(s, o, mask, torch.ones(3)), head(s, o, mask))  # the T handed in is the one used


def test_a_head_saved_before_softening_loads_as_trained(tmp_path):
    from safetensors.torch import save_file

    head = _head()
    old = {k: v for k, v in head.state_dict().items() if k not in ("neighbours", "softening")}
    save_file(old, str(tmp_path / P.HEAD_FILE))
    loaded = P.load_head(tmp_path, 32)
    s, o, mask = torch.randn(2, 32), torch.randn(2, 3, 32), torch.ones(2, 3, dtype=torch.bool)
    assert len(loaded.neighbours) == 0 and torch.equal(loaded(s, o, mask), head(s, o, mask))
    softened = _head()
    softened.neighbours = softened.unit_states(torch.randn(4, 32)); softened.softening.fill_(0.5)
    save_file({k: v.contiguous() for k, v in softened.state_dict().items()}, str(tmp_path / P.HEAD_FILE))
    again = P.load_head(tmp_path, 32)
    assert again.neighbours.shape == (4, 32) and torch.allclose(again(s, o, mask), softened(s, o, mask))


def test_familiarity_is_the_share_of_training_distances_beyond_the_state():
    head = _head()
    at_mean = head.familiarity(head.state_mean[None])
    far = head.familiarity(head.state_mean[None] + 100 * head.state_scale)
    middle = head.familiarity(head.state_mean[None] + 2.5 ** 0.5 * head.state_scale)  # distance 2.5: percentile 50
    assert at_mean.item() == 1.0 and far.item() == 0.0 and middle.item() == pytest.approx(1 - 50 / 101, abs=1e-6)


def test_reader_means_are_batch_independent_and_skip_the_header(lm, letter_tok):
    reader = P.PooledReader(lm.model, letter_tok, 2)
    texts = [STATE, "short", "a much longer state " * 6]
    batched = reader.states(texts)
    for i, t in enumerate(texts):
        ids = encode_prefix(letter_tok, render_prefix(t))
        hidden = first_layers(lm.model, 2)(input_ids=torch.tensor([ids])).last_hidden_state[0]
        assert torch.allclose(batched[i], hidden[reader.header:].mean(0), atol=1e-5)
    assert reader.header == len(encode(letter_tok, "User: Context:"))


def test_reader_reads_an_options_own_tokens_after_its_question(lm, letter_tok):
    reader = P.PooledReader(lm.model, letter_tok, 2)
    got = reader.options([("Which team?", "billing"), ("Which team?", "security desk")])
    for i, option in enumerate(("billing", "security desk")):
        ids = encode(letter_tok, f"Question: Which team?\nAnswer: {option}")
        head = len(encode(letter_tok, "Question: Which team?\nAnswer:"))
        hidden = first_layers(lm.model, 2)(input_ids=torch.tensor([ids])).last_hidden_state[0]
        assert torch.allclose(got[i], hidden[head:].mean(0), atol=1e-5)


def test_reader_reads_an_option_in_context_after_the_state_and_its_question(lm, letter_tok, monkeypatch):
    reader = P.PooledReader(lm.model, letter_tok, 2)
    pairs = [("Which team?", "billing"), ("Which team?", "security desk"), ("Page now?", "true")]
    shared = reader.options(pairs, STATE)  # the state's prefix read once, its keys and values shared
    for i, (question, option) in enumerate(pairs):
        ids = encode(letter_tok, render_prefix(STATE) + f"Question: {question}\nAnswer: {option}")
        head = len(encode(letter_tok, render_prefix(STATE) + f"Question: {question}\nAnswer:"))
        hidden = first_layers(lm.model, 2)(input_ids=torch.tensor([ids])).last_hidden_state[0]
        assert torch.allclose(shared[i], hidden[head:].mean(0), atol=1e-5)

    def merging(tokenizer, prefix, suffix):
        raise P.SeamError("merges")

    monkeypatch.setattr(P, "check_seam", merging)  # a tokenizer merging across the seam: each read whole
    assert torch.allclose(reader.options(pairs, STATE), shared, atol=1e-5)


def test_a_card_reading_options_in_context_reads_them_after_each_state(lm, letter_tok):
    reader, head = P.PooledReader(lm.model, letter_tok, 2), _head()
    card = P.PooledCard(format=P.FORMAT, base_model="b", base_sha256="0", layer=2, options_read="in_context", sha256={})
    decider = P.PooledDecider(reader, head, "t", card)
    for state in (STATE, "The server is down."):
        answers = decider.decide(state, QS)
        s = reader.states([state])
        assert len(answers) == len(QS)
        for q, a in zip(QS, answers):
            o = reader.options([(q.text, opt) for opt in q.options], state)
            want = torch.softmax(head(s, o[None], torch.ones(1, len(q.options), dtype=torch.bool)), -1)[0]
            assert [a.probs[opt] for opt in q.options] == pytest.approx(want.tolist(), abs=1e-5)
    assert not decider._options  # nothing kept: an option's states depend on the state
    alone = P.PooledDecider(reader, head, "t").decide(STATE, QS)
    assert any(a.probs != b.probs for a, b in zip(alone, decider.decide(STATE, QS)))


def test_decider_answers_are_the_heads_softmax(lm, letter_tok):
    reader, head = P.PooledReader(lm.model, letter_tok, 2), _head()
    decider = P.PooledDecider(reader, head, "t")
    answers = decider.decide(STATE, QS)
    s = reader.states([STATE])
    assert len(answers) == len(QS)
    for q, a in zip(QS, answers):
        o = reader.options([(q.text, opt) for opt in q.options])
        want = torch.softmax(head(s, o[None], torch.ones(1, len(q.options), dtype=torch.bool)), -1)[0]
        assert [a.probs[opt] for opt in q.options] == pytest.approx(want.tolist(), abs=1e-5)
    out = decider.score(STATE, {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "", "security": ""}},
                                "page": {"type": "noul", "instructions": "Page now?"}})
    assert set(out["answers"]) == {"team", "page"} and out["usage"]["path"] == "pooled"
    assert sum(out["answers"]["team"]["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)


def test_decider_limits_name_what_is_wrong(lm, letter_tok, monkeypatch):
    decider = P.PooledDecider(P.PooledReader(lm.model, letter_tok, 2), _head(), "t")
    monkeypatch.setattr(P, "LIMITS", P.Limits(max_state_tokens=5, max_suffix_tokens=448))
    page = {"page": {"type": "noul", "instructions": "Page now?"}}
    assert "at most 5" in decider.limit_errors(STATE, page)["state"]
    with pytest.raises(ValueError, match="at most 5"):
        decider.decide(STATE, QS)
    assert "empty" in decider.limit_errors("  ", page)["state"]
    monkeypatch.setattr(P, "LIMITS", P.Limits(max_state_tokens=4096, max_suffix_tokens=12))
    long = {"team": {"type": "choice", "instructions": "Which team?",
                     "criteria": {"billing": "", "security": "the security desk " * 4}}}
    assert "question 'team' has an option read as" in decider.limit_errors(STATE, long)["team"]
    with pytest.raises(ValueError, match="at most 12"):
        decider.score(STATE, long)


def test_a_state_no_tokenization_fits_is_refused_untokenized(lm, letter_tok, monkeypatch):
    decider = P.PooledDecider(P.PooledReader(lm.model, letter_tok, 2), _head(), "t")
    monkeypatch.setattr(decider.reader, "state_ids", lambda text: pytest.fail("tokenized a hopeless state"))
    hopeless = "x" * (4096 * decider.token_chars + 70_000)
    with pytest.raises(ValueError, match="more than 4096 tokens can hold"):
        decider.decide(hopeless, QS)
    page = {"page": {"type": "noul", "instructions": "Page now?"}}
    assert "more than 4096 tokens can hold" in decider.limit_errors(hopeless, page)["state"]
    assert "truncate" not in decider.limit_errors(hopeless, page)["state"]  # a pooled readout cuts nothing


def test_the_option_cache_keeps_the_most_recent(lm, letter_tok, monkeypatch):
    decider = P.PooledDecider(P.PooledReader(lm.model, letter_tok, 2), _head(), "t")
    monkeypatch.setattr(P, "OPTION_CACHE", 3)
    first = decider.decide(STATE, QS)
    for i in range(4):
        decider.decide(STATE, [Choice("Which team?", [f"team {i}", f"desk {i}"])])
    assert len(decider._options) == 3 and ("Which team?", "desk 3") in decider._options
    again = decider.decide(STATE, QS)  # read afresh after being dropped: the same answers
    assert len(first) == len(again) == len(QS)
    for a, b in zip(first, again):
        assert list(a.probs.values()) == pytest.approx(list(b.probs.values()), abs=1e-6)


@pytest.fixture
def saved(tmp_path):
    base = build_tiny_llama(tmp_path / "base")  # a Llama like SmolLM2, with a chat template as the loader wants
    folder = save_tiny_pooled(tmp_path / "arm", base, _head(), training={"arm": "test"})
    return folder, base


def test_folder_round_trip_is_exact(saved):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, base = saved
    loaded = P.load_pooled(folder)
    model = AutoModelForCausalLM.from_pretrained(base).eval()
    direct = P.PooledDecider(P.PooledReader(model.model, AutoTokenizer.from_pretrained(base), 2), _head())
    got, want = loaded.decide(STATE, QS), direct.decide(STATE, QS)
    assert len(got) == len(want) == len(QS)
    for a, b in zip(got, want):
        assert list(a.probs.values()) == pytest.approx(list(b.probs.values()), abs=1e-5)
    assert P.read_card(folder).training == {"arm": "test"} and loaded.design == P.POOLED_DESIGN
    assert P.read_card(folder).options_read == "alone"


def test_a_folder_reading_options_in_context_answers_as_its_decider(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = build_tiny_llama(tmp_path / "base")
    folder = save_tiny_pooled(tmp_path / "arm", base, _head(), options_read="in_context")
    card = P.read_card(folder)
    model = AutoModelForCausalLM.from_pretrained(base).eval()
    direct = P.PooledDecider(P.PooledReader(model.model, AutoTokenizer.from_pretrained(base), 2), _head(), "", card)
    got, want = P.load_pooled(folder).decide(STATE, QS), direct.decide(STATE, QS)
    assert len(got) == len(want) == len(QS)
    for a, b in zip(got, want):
        assert list(a.probs.values()) == pytest.approx(list(b.probs.values()), abs=1e-5)
    assert card.options_read == "in_context"
    written = json.loads((folder / P.CARD_FILE).read_text())
    (folder / P.CARD_FILE).write_text(json.dumps({**written, "options_read": "sideways"}))
    with pytest.raises(P.PooledModelError, match="options_read"):
        P.read_card(folder)


def test_a_changed_head_is_refused(saved):
    folder, _ = saved
    data = bytearray((folder / P.HEAD_FILE).read_bytes())
    data[-3] ^= 0x01
    (folder / P.HEAD_FILE).write_bytes(bytes(data))
    with pytest.raises(P.PooledModelError, match="pooled_head.safetensors: sha256 does not match pooled.json"):
        P.load_pooled(folder)


def test_another_base_is_refused(saved):
    folder, base = saved
    build_tiny_llama(base, seed=9)
    with pytest.raises(P.PooledModelError, match="not the one this head was trained on"):
        P.load_pooled(folder)


@pytest.mark.parametrize("change, message", [({"format": "other"}, "format 'other'"), ({"layer": "x"}, "malformed"),
                                             ({"sha256": {}}, "no sha256 for pooled_head")])
def test_a_bad_card_names_what_is_wrong(saved, change, message):
    folder, _ = saved
    card = json.loads((folder / P.CARD_FILE).read_text())
    card.update(change)
    (folder / P.CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(P.PooledModelError, match=message):
        P.load_pooled(folder)


def test_open_model_reports_the_folder(tmp_path):
    with pytest.raises(ValueError, match="nothing: .*malformed"):
        P.open_model(tmp_path, "nothing")


def test_state_familiarity_is_the_heads_and_reads_an_answered_state_once(lm, letter_tok, monkeypatch):
    from core.decision.questions import render_state

    decider = P.PooledDecider(P.PooledReader(lm.model, letter_tok, 2), _head(), "t")
    decider.decide(STATE, QS)
    real, calls = decider.reader.mean_states, []
    monkeypatch.setattr(decider.reader, "mean_states", lambda *a, **k: calls.append(1) or real(*a, **k))
    found = decider.state_familiarity(render_state(STATE))
    assert calls == [] and found.threshold == P.FAMILIAR_BELOW  # the answer's own read of the state
    assert found.share == pytest.approx(float(decider.head.familiarity(decider.reader.states([STATE]))[0]))
    other = decider.state_familiarity("A different state entirely.")
    assert len(calls) == 2 and 0.0 <= other.share <= 1.0
    decider._read.size = 1  # the kept reads are bounded (core.models.layers.RecentStates): the oldest goes
    decider.decide("A different state entirely.", QS)
    decider.state_familiarity(render_state(STATE))
    assert len(calls) == 4  # the decide's read, then STATE read again
