"""The published decision layout both ways: our export passes the published loader's checks, and a
directory written the way the published exporter writes it loads here and answers as published.

The published code is eve-rlcd's ``rlcd/export.py`` (layout, record, loader checks) and
``rlcd/decide.py`` (prompt, readout); the helpers below reconstruct what they do, in our words.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoTokenizer

from core.decision import Choice, Noul, Score
from core.decision.export.published import (
    CARD_FILE, CONFIG_HASHES, HEAD_FILE, MODEL_FILE, DecisionExportError, adds_bos, export_decision, load_decider,
    reexport,
)
from core.decision.data.store import sha256_file
from core.decision.prompt import LETTER_TOKENS, render_prompt
from core.decision.random_model import random_body, random_rows

STATE = "Ticket 77 from an enterprise customer. Report: pods crash looping in prod. Note: production is down."
QS = [Choice("Which department should handle this ticket?", ["BILLING", "INFRASTRUCTURE", "SECURITY"]),
      Score("What is the priority of this ticket?", ["P3_LOW", "P2_NORMAL", "P1_HIGH", "P0_CRITICAL"]),
      Noul("Should an on-call engineer be paged immediately?")]
PUBLISHED_RECORD_FIELDS = {
    "format", "source", "base_model", "model_type", "hidden_size", "letters", "letter_ids", "max_choices",
    "prepend_bos", "pad_id", "tied_embeddings", "head_file", "prompt", "primitives", "confidence", "training",
    "policy", "note", "sha256",
}
"""Every field the published exporter writes into decision.json."""


def published_loader(root: Path):
    """The published loader's checks, in order; returns (body, weight, bias, record) or raises AssertionError."""
    record = json.loads((root / CARD_FILE).read_text())
    assert record["format"] == "rlcd-decision-only-v1"
    for name, digest in record["sha256"].items():
        assert sha256_file(root / name) == digest, name
    tok = AutoTokenizer.from_pretrained(root)
    ids = [tok.encode(t, add_special_tokens=False) for t in LETTER_TOKENS]
    assert all(len(i) == 1 for i in ids) and [i[0] for i in ids] == list(record["letter_ids"])
    assert adds_bos(tok) == bool(record["prepend_bos"])
    body, info = AutoModel.from_pretrained(root, dtype=torch.float32, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info.get("mismatched_keys"), info
    assert body.get_output_embeddings() is None
    theta = (getattr(body.config, "rope_parameters", None) or {}).get("rope_theta")
    assert theta is None or getattr(body.config, "rope_theta", theta) == theta
    head = load_file(root / record.get("head_file", HEAD_FILE))
    assert tuple(head["weight"].shape) == (26, body.config.hidden_size) and set(head) <= {"weight", "bias"}
    return body.eval(), head["weight"], head.get("bias"), record


def published_probs(body, weight, bias, tok, state: str, questions) -> list[list[float]]:
    """What the published Decider answers: one full prompt per question, fp32 letter readout,
    letters beyond the option count masked, softmax, then the K option probabilities renormalised."""
    out = []
    for q in questions:
        ids = torch.tensor([tok.encode(render_prompt(state, q.text, q.options), add_special_tokens=False)])
        with torch.no_grad():
            h = body(input_ids=ids).last_hidden_state[0, -1].float()
        logits = h @ weight.float().T + (0 if bias is None else bias.float())
        k = len(q.options)
        logits[k:] = -1e4
        p = torch.softmax(logits, -1)[:k].double()
        out.append((p / p.sum()).tolist())
    return out


def _ours(decider, path="reference"):
    return [list(a.probs.values()) for a in decider.decide(STATE, QS, path=path)]


def _close(a, b, tol):
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) <= tol


@pytest.fixture
def ours(tmp_path, make_decider):
    d = make_decider()
    return export_decision(tmp_path / "ours", d.body, d.rows, d.tokenizer, base_model="random", training={"steps": 0}), d


def test_our_export_passes_the_published_loader_and_answers_the_same(ours):
    root, decider = ours
    body, weight, bias, record = published_loader(root)
    assert PUBLISHED_RECORD_FIELDS <= set(record) and set(record["sha256"]) == {MODEL_FILE, HEAD_FILE}
    assert record["letters"] == [t.strip() for t in LETTER_TOKENS] and bias is None
    for name in (MODEL_FILE, HEAD_FILE):
        with safe_open(str(root / name), framework="pt") as fh:
            assert fh.metadata() == {"format": "pt"}, name
    assert "embed_tokens.weight" in load_file(root / MODEL_FILE)
    tok_cfg = json.loads((root / "tokenizer_config.json").read_text())
    assert tok_cfg["tokenizer_class"] != "TokenizersBackend"  # a class transformers 4.57 does not know
    want = published_probs(body, weight, bias, decider.tokenizer, STATE, QS)
    loaded = load_decider(root)
    for path in ("reference", "shared", "packed"):
        assert _close(_ours(loaded, path), want, 1e-5), path


def write_published(root: Path, body, weight, bias, tok) -> Path:
    """A directory laid out as the published exporter writes it (its save_pretrained calls included)."""
    body.save_pretrained(root, safe_serialization=True)
    tok.save_pretrained(root)
    save_file({"weight": weight, "bias": bias}, str(root / HEAD_FILE), metadata={"format": "pt"})
    record = {
        "format": "rlcd-decision-only-v1", "source": "runs/q-rlcd", "base_model": "Qwen/Qwen3-0.6B-Base",
        "model_type": body.config.model_type, "hidden_size": int(weight.shape[1]),
        "letters": [t.strip() for t in LETTER_TOKENS], "letter_ids": [tok.encode(t, add_special_tokens=False)[0] for t in LETTER_TOKENS],
        "max_choices": 26, "prepend_bos": False, "pad_id": tok.pad_token_id, "tied_embeddings": False,
        "head_file": HEAD_FILE, "prompt": {"prefix": "User: Context:\n{state}\n\n"}, "primitives": {}, "confidence": {},
        "training": {"steps": 500, "arm": "rlcd"}, "policy": {"origin": "Qwen/Qwen3-0.6B-Base"}, "note": "untied",
        "resaved": True,  # the published re-save merges metadata in at the top level
        "sha256": {n: sha256_file(root / n) for n in (MODEL_FILE, HEAD_FILE)},
    }
    (root / CARD_FILE).write_text(json.dumps(record, indent=2))
    return root


def test_a_published_directory_loads_and_answers_as_published(tmp_path, letter_tok):
    body = random_body(len(letter_tok), seed=3, hidden=32, layers=2, heads=4, kv_heads=2, head_dim=8)
    weight, bias = random_rows(32, seed=4), torch.linspace(-0.5, 0.5, 26)
    root = write_published(tmp_path / "pub", body, weight, bias, letter_tok)
    want = published_probs(body, weight, bias, letter_tok, STATE, QS)
    decider = load_decider(root)
    assert torch.equal(decider.bias.cpu(), bias)
    for path in ("reference", "shared", "packed"):
        assert _close(_ours(decider, path), want, 1e-5), path
    again = reexport(root, tmp_path / "again")  # and our re-export of it keeps bias and answers
    assert set(load_file(again / HEAD_FILE)) == {"weight", "bias"}
    assert _close(_ours(load_decider(again)), want, 1e-6)


@pytest.mark.parametrize("name, edit", [
    ("config.json", lambda c: c.update(rope_parameters={"rope_theta": 20000.0, "rope_type": "default"})),
    ("tokenizer_config.json", lambda c: c.update(model_max_length=8)),
])
def test_a_changed_config_or_tokenizer_file_is_refused(ours, name, edit):
    # published: neither file is hashed, so a changed rope_theta loads silently and moves answers
    root, _ = ours
    cfg = json.loads((root / name).read_text())
    edit(cfg)
    (root / name).write_text(json.dumps(cfg))
    with pytest.raises(DecisionExportError, match=f"{name}: sha256 does not match"):
        load_decider(root)
    published_loader(root)  # the published loader still loads it: our hashes do not get in its way


def test_our_extra_hashes_cover_config_and_tokenizer(ours):
    root, _ = ours
    recorded = json.loads((root / CARD_FILE).read_text())[CONFIG_HASHES]
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= set(recorded)
    (root / "tokenizer.json").unlink()
    with pytest.raises(DecisionExportError, match="missing tokenizer.json"):
        load_decider(root)


@pytest.mark.parametrize("tensors, fragment", [
    ({"weight": torch.zeros(25, 32)}, "shape (26, 32)"),           # a row short
    ({"weight": torch.zeros(26, 32), "lm_head": torch.zeros(2)}, "found"),  # a stray tensor
    ({"weight": torch.zeros(26, 32), "bias": torch.zeros(4)}, "bias (26,)"),  # a bias of the wrong size
])
def test_a_bad_head_is_refused(ours, tensors, fragment):
    root, _ = ours
    save_file(tensors, str(root / HEAD_FILE), metadata={"format": "pt"})
    card = json.loads((root / CARD_FILE).read_text())
    card["sha256"][HEAD_FILE] = sha256_file(root / HEAD_FILE)
    (root / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(DecisionExportError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        load_decider(root)


def write_legacy(root: Path, decider) -> Path:
    """Our earlier layout (before the published one): body.safetensors, letter_rows.safetensors."""
    root.mkdir()
    save_file({k: v.contiguous() for k, v in decider.body.state_dict().items()}, str(root / "body.safetensors"),
              metadata={"format": "rlcd-decision-only-v1"})
    save_file({"letter_rows": decider.rows.contiguous()}, str(root / "letter_rows.safetensors"))
    decider.body.config.save_pretrained(root)
    decider.tokenizer.save_pretrained(root)
    card = {"format": "rlcd-decision-only-v1", "letters": [t.strip() for t in LETTER_TOKENS],
            "letter_token_ids": decider.letter_ids, "prompt_template": "...", "primitives": {}, "confidence": {},
            "training": {"steps": 1}, "base_model": "random", "prepend_bos": False, "pad_id": None,
            "tied_embeddings": False, "hidden_size": 32,
            "sha256": {n: sha256_file(root / n) for n in ("body.safetensors", "letter_rows.safetensors")}}
    (root / CARD_FILE).write_text(json.dumps(card))
    return root


def test_the_earlier_layout_still_loads_and_reexports_to_the_same_answers(tmp_path, make_decider):
    old = write_legacy(tmp_path / "old", make_decider())
    before = _ours(load_decider(old))
    new = reexport(old, tmp_path / "new")
    assert _close(_ours(load_decider(new)), before, 1e-6)
    assert json.loads((new / CARD_FILE).read_text())["training"] == {"steps": 1}
    published_loader(new)
    data = bytearray((old / "letter_rows.safetensors").read_bytes())
    data[-3] ^= 0x01
    (old / "letter_rows.safetensors").write_bytes(bytes(data))
    with pytest.raises(DecisionExportError, match="letter_rows.safetensors: sha256 does not match"):
        load_decider(old)


@pytest.mark.parametrize("change, fragment", [
    (lambda c: c["sha256"].update({"../outside.json": "0" * 64}), "only files in the directory"),  # a path out
    (lambda c: c.update(head_file="../head.safetensors"), "must be a file name"),                  # likewise
    (lambda c: c.update(hidden_size=64), "hidden_size 64, config.json 32"),                        # a wrong width
])
def test_a_record_pointing_elsewhere_is_refused(ours, change, fragment):
    root, _ = ours
    card = json.loads((root / CARD_FILE).read_text())
    change(card)
    (root / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(DecisionExportError, match=fragment):
        load_decider(root)
