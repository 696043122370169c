"""The three Decider paths agree, answers are independent of other questions, limits are enforced."""

import random

import pytest
import torch

from core.decision import Choice, Decider, Limits, Noul, QuestionError, RequestTooLong, Score
from core.decision.prompt import encode, render_prompt, render_suffix
from core.decision.questions import render_state
from core.decision.random_model import _WORDS

from .test_prompt import _gpt2_style_tokenizer

SMALL_CHUNKS = Limits(question_chunk=3, packed_chunk_tokens=70)  # forces several chunks per request


def random_state(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 90))) + rng.choice([".", "!", "", "?"])


def random_question(rng: random.Random, i: int):
    kind = rng.choice(["choice", "score", "noul"])
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12))) + "?"
    if kind == "noul":
        return Noul(text, qid=f"q{i}")
    k = rng.choice([2, 3, 4, 7, 10, 26])
    opts = [f"{rng.choice(_WORDS)} {j}" for j in range(k)]
    return (Choice if kind == "choice" else Score)(text, opts, qid=f"q{i}")


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_and_packed_equal_reference(make_decider, attn):
    decider = make_decider(attn, limits=SMALL_CHUNKS)
    rng, worst = random.Random(attn), 0.0
    for _ in range(16):
        qs = [random_question(rng, i) for i in range(rng.randint(1, 9))]
        req = decider.tokenize(random_state(rng), qs)
        ref = decider.probabilities(req, path="reference")
        for path in ("shared", "packed", "auto"):
            worst = max(worst, (decider.probabilities(req, path=path) - ref).abs().max().item())
    assert worst <= 1e-5


def test_masked_letters_are_exactly_zero_on_every_path(make_decider):
    decider = make_decider()
    qs = [Choice("Which?", ["a", "b"]), Score("How?", ["1", "2", "3", "4", "5"]), Noul("Is it?")]
    req = decider.tokenize("some state text", qs)
    for path in ("reference", "shared", "packed"):
        p = decider.probabilities(req, path=path)
        assert (p[0, 2:] == 0).all() and (p[1, 5:] == 0).all() and (p[2, 2:] == 0).all()
        assert torch.allclose(p.sum(-1), torch.ones(3), atol=1e-6)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("path", ["shared", "packed", "auto"])
def test_other_questions_do_not_change_an_answer(make_decider, path, attn):
    decider = make_decider(attn, limits=SMALL_CHUNKS)
    rng = random.Random(7)
    state = random_state(rng)
    target = Score("How urgent is this?", ["low", "normal", "high", "critical"], qid="t")
    others = [random_question(rng, i) for i in range(8)]
    alone = decider.decide(state, [target], path=path)[0].probs
    for trial in range(4):
        mix = rng.sample(others, rng.randint(1, 8))  # add, remove, reorder
        mix.insert(rng.randint(0, len(mix)), target)
        got = decider.decide(state, mix, path=path)[mix.index(target)].probs
        assert max(abs(got[k] - alone[k]) for k in alone) <= 1e-6


def test_decide_keeps_keys_and_score_call_shape(make_decider):
    decider = make_decider()
    out = decider.decide({"ticket": "login fails"}, {"a": Noul("Is it urgent?"), "b": Choice("Who?", ["x", "y"])})
    assert list(out) == ["a", "b"] and out["a"].p_true is not None
    res = decider.score("login fails", {
        "team": {"type": "choice", "instructions": "Which team?", "criteria": {"SEC": "security", "BIL": "billing"}},
        "prio": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
        "page": {"type": "noul", "instructions": "Page someone now?"},
    })
    assert set(res["answers"]) == {"team", "prio", "page"}
    assert set(res["answers"]["team"]["probabilities"]) == {"SEC", "BIL"}
    assert 0 <= res["answers"]["prio"]["score"] <= 2 and "p_true" in res["answers"]["page"]  # System One: levels 0..K-1
    assert res["usage"]["state_truncated"] is False and res["usage"]["input_tokens"] > res["usage"]["state_tokens"]


def test_bad_requests_are_refused(make_decider):
    decider = make_decider()
    with pytest.raises(QuestionError, match="no questions"):
        decider.decide("state", [])
    with pytest.raises(QuestionError, match="state is empty"):
        decider.decide(" ", [Noul("Is it?")])
    with pytest.raises(QuestionError, match="expected Choice, Score or Noul"):
        decider.decide("state", [{"kind": "choice"}])
    with pytest.raises(ValueError, match="unknown path"):
        decider.decide("state", [Noul("Is it?")], path="fast")


def test_over_limit_is_refused_with_counts_or_flagged_when_opted_in(make_decider):
    decider = make_decider(limits=Limits(max_state_tokens=40, max_suffix_tokens=45))
    state = " ".join(["customer billing outage"] * 30)
    long_q = Choice("which " * 40 + "team?", ["billing", "security"], qid="long")
    short_q = Noul("Is it urgent?", qid="short")
    with pytest.raises(RequestTooLong) as err:
        decider.decide(state, [short_q, long_q])
    msg = str(err.value)
    assert "the state is" in msg and "limit 40" in msg and "question 'long' is" in msg and "truncate=True" in msg
    assert [o.part for o in decider.overruns(state, [short_q, long_q])] == ["state", "long"]
    answers = decider.decide(state, [short_q, long_q], truncate=True)
    assert answers[0].truncated.state_tokens_removed > 0 and answers[0].truncated.question_tokens_removed == 0
    assert answers[1].truncated.question_tokens_removed > 0
    req = decider.tokenize(state, [short_q, long_q], truncate=True)
    kept = decider.tokenizer.decode(req.prefix).removeprefix("User: Context:\n").strip()
    # as published: the last 40 state tokens, decoded and stripped (re-encoded it may differ by one at the cut)
    assert kept == decider.tokenizer.decode(encode(decider.tokenizer, state)[-40:]).strip()
    assert all(len(s) <= 45 for s in req.suffixes)
    res = decider.score(state, {"p": {"type": "noul", "instructions": "Is it urgent?"}}, truncate=True)
    assert res["usage"]["state_truncated"] is True and res["answers"]["p"]["truncated"]["state_tokens_removed"] > 0


def test_options_are_never_cut(make_decider):
    decider = make_decider(limits=Limits(max_suffix_tokens=30))
    many = Choice("Which?", [f"option number {i} here" for i in range(10)], qid="wide")
    with pytest.raises(RequestTooLong, match="options alone exceed"):
        decider.decide("state", [many], truncate=True)


def test_a_gpt2_style_tokenizer_shares_the_prefix_the_whole_prompt_holds(make_decider):
    """SmolLM2's whitespace split: the shared prefix is the whole prompt's, so every path stays exact."""
    tok = _gpt2_style_tokenizer()
    decider = Decider(make_decider().body, torch.randn(26, 32, generator=torch.Generator().manual_seed(0)), tok)
    rng = random.Random(7)
    for _ in range(6):
        state, qs = random_state(rng), [random_question(rng, i) for i in range(rng.randint(1, 4))]
        req = decider.tokenize(state, qs)
        for q, suffix in zip(qs, req.suffixes):
            assert req.prefix + suffix == encode(tok, render_prompt(render_state(state), q.text, q.options))
        ref = decider.probabilities(req, path="reference")
        for path in ("shared", "packed"):
            assert (decider.probabilities(req, path=path) - ref).abs().max().item() <= 1e-5


def test_core_decision_imports_neither_gradio_nor_trl():
    import subprocess
    import sys

    code = "import sys, core.decision.export.published; assert not {'gradio', 'trl'} & set(sys.modules), 'leak'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("path", ["shared", "packed"])
def test_forwards_are_bounded_by_the_chunk_size_not_the_question_count(make_decider, path):
    limits = Limits(question_chunk=3, packed_chunk_tokens=80)
    decider = make_decider(limits=limits)
    shapes = []
    hook = decider.body.register_forward_hook(lambda mod, args, kwargs, out: shapes.append(tuple(kwargs["input_ids"].shape)),
                                              with_kwargs=True)
    try:
        rng = random.Random(3)
        req = decider.tokenize(random_state(rng), [Noul(f"Is {w} relevant?") for w in rng.sample(_WORDS, 12)])
        decider.probabilities(req, path=path)
    finally:
        hook.remove()
    longest = max(len(s) for s in req.suffixes)
    if path == "shared":  # one prefill, then batches of at most 3 suffixes
        assert shapes[0] == (1, len(req.prefix)) and all(b <= 3 for b, _ in shapes[1:]) and len(shapes) == 1 + 4
    else:  # the first forward carries the state; every forward holds at most 80 suffix tokens
        assert shapes[0][1] <= len(req.prefix) + max(80, longest)
        assert all(n <= max(80, longest) for _, n in shapes[1:]) and len(shapes) > 2


def test_prepend_bos_needs_a_bos_token(make_decider, letter_tok):
    with pytest.raises(ValueError, match="no BOS token"):
        Decider(make_decider().body, torch.zeros(26, 32), letter_tok, prepend_bos=True)


def _state_of(tok, n: int) -> str:
    """A state text of exactly ``n`` tokens under ``tok``."""
    words = " ".join(["billing outage"] * n)
    ids = encode(tok, words)
    text = tok.decode(ids[:n]).strip()
    while len(encode(tok, text)) > n:
        text = text[:-1].strip()
    return text


def test_the_state_limit_counts_state_tokens_only_as_published(make_decider):
    # published: 1536 counts the stripped state's tokens, never the header or the blank line
    decider = make_decider(limits=Limits(max_state_tokens=30))
    tok, q = decider.tokenizer, [Noul("Is it urgent?")]
    fits = _state_of(tok, 30)
    assert len(encode(tok, fits)) == 30 and decider.overruns(fits, q) == []
    req = decider.tokenize(fits, q)
    assert len(req.prefix) > 30 and req.truncations == [None]  # the header comes on top
    over = " ".join(["billing outage"] * 40)
    (o,) = decider.overruns(over, q)
    assert (o.part, o.tokens, o.limit) == ("state", len(encode(tok, over)), 30)
    cut = decider.tokenize(over, q, truncate=True)
    kept = tok.decode(cut.prefix).removeprefix("User: Context:\n").strip()
    assert kept == tok.decode(encode(tok, over)[-30:]).strip()  # the last 30 state tokens, as published


def test_a_cut_question_keeps_the_end_of_its_text_and_all_options(make_decider):
    # published: the question's text is cut from its start until the suffix fits
    decider = make_decider(limits=Limits(max_suffix_tokens=40))
    q = Choice("padding " * 30 + "which team owns the login outage?", ["billing", "security"], qid="q")
    (o,) = decider.overruns("state", [q])
    assert o.part == "q" and o.tokens > 40 and o.limit == 40
    req = decider.tokenize("state", [q], truncate=True)
    text = decider.tokenizer.decode(req.suffixes[0])
    assert len(req.suffixes[0]) <= 40 and "login outage?" in text and "A) billing\nB) security" in text
    assert req.truncations[0].question_tokens_removed == len(encode(decider.tokenizer, render_suffix(q.text, q.options))) - len(req.suffixes[0])


def test_a_part_that_cannot_fit_is_refused_before_tokenizing(make_decider, monkeypatch):
    import core.decision.decider as decider_module

    decider = make_decider()
    per = decider.max_token_chars
    assert per == max(len(t) for t in decider.tokenizer.get_vocab())
    seen: list[int] = []
    real = decider_module.encode
    monkeypatch.setattr(decider_module, "encode", lambda tok, text: seen.append(len(text)) or real(tok, text))
    huge = "billing " * (1536 * per // 8 + 10_000)
    with pytest.raises(RequestTooLong, match=f"the state is {len(huge.strip()):,} characters, more than 1536 tokens "
                                             f"can hold \\({1536 * per:,}: {per} characters"):
        decider.decide(huge, [Noul("Is it urgent?")])
    assert max(seen, default=0) < 1000  # only the seam probe's short texts were tokenized
    long_q = Choice("which " * 20_000 + "team?", ["billing", "security"], qid="long")
    with pytest.raises(RequestTooLong, match="question 'long' is 120,020 characters"):
        decider.decide("short state", [long_q])
    small = " ".join(["customer billing outage"] * 30)  # small parts keep the exact token count
    with pytest.raises(RequestTooLong, match="the state is \\d+ tokens, limit 40"):
        make_decider(limits=Limits(max_state_tokens=40)).decide(small, [Noul("Is it urgent?")])
