"""The graft's write: the LoRA it fills makes one query head compute the fitted form exactly (up to the
slow rotary turn), its values carry the letter probe and its o_proj block the letter directions."""

import pytest
import torch

from core.decision.batches import Prompt
from core.decision.prompt import render_prompt
from core.decision.random_model import letter_tokenizer
from train.decision_graft import (OUTSIDE, Head, LayerInputs, fit_identity_bilinear, graft_lora, letter_bias, line_ends,
                                  query_map, slow_rotary_dims, token_roles, write_head)


def test_slow_rotary_dims_are_the_slowest_pairs_first():
    assert slow_rotary_dims(8, 3) == [3, 7, 2]
    assert slow_rotary_dims(64, 4) == [31, 63, 30, 62]


def test_token_roles_mark_each_options_text_and_nothing_else():
    tok = letter_tokenizer()
    prompt = Prompt("My card was charged twice.", "Which team?", ("billing", "security team"))
    roles = token_roles(tok, prompt)
    ids = tok(render_prompt(prompt.state, prompt.question, list(prompt.options)), add_special_tokens=False)["input_ids"]
    assert len(roles) == len(ids)
    for i, option in enumerate(prompt.options):
        text = tok.decode([t for t, r in zip(ids, roles) if r == i])
        assert text.strip() == ") " + option
    assert roles[-1] == OUTSIDE and OUTSIDE in roles[:5]


def test_line_ends_are_each_options_last_token_and_only_those():
    roles = torch.tensor([OUTSIDE, OUTSIDE, 0, 0, 0, OUTSIDE, 1, 1, OUTSIDE, 2])
    assert line_ends(roles).nonzero()[:, 0].tolist() == [4, 7, 9]
    tok = letter_tokenizer()
    prompt = Prompt("My card was charged twice.", "Which team?", ("billing", "security team", "none"))
    roles = torch.tensor(token_roles(tok, prompt))
    ids = tok(render_prompt(prompt.state, prompt.question, list(prompt.options)), add_special_tokens=False)["input_ids"]
    assert [tok.decode([ids[j]]) for j in line_ends(roles).nonzero()[:, 0]] == ["\n"] * 3


def test_the_identity_bilinear_reads_the_option_each_line_end_names():
    """Line ends carry their option's code (plus noise), the last token which option is right: the fitted bilinear
    over raw tokens, M = W D, must score the right line end highest on rows it never saw."""
    g = torch.Generator().manual_seed(0)
    H, names = 32, ["BILLING", "SECURITY", "INFRASTRUCTURE", "PRODUCT_SUPPORT"]
    code, want = torch.randn(len(names), H, generator=g), torch.randn(len(names), H, generator=g)

    def rows(n):
        xs, roles, options, labels = [], [], [], []
        for _ in range(n):
            order = torch.randperm(len(names), generator=g).tolist()
            label = int(torch.randint(len(names), (1,), generator=g))
            x = torch.randn(2 + 2 * len(names) + 1, H, generator=g) * 0.3
            r = [OUTSIDE, OUTSIDE] + [i for i in range(len(names)) for _ in (0, 1)] + [OUTSIDE]
            for i, o in enumerate(order):
                x[2 + 2 * i + 1] += code[o]
            x[-1] += want[order[label]]
            xs.append(x); roles.append(torch.tensor(r)); options.append([names[o] for o in order]); labels.append(label)
        return LayerInputs(xs, roles, torch.zeros(n, 26), torch.full((n,), len(names)), torch.tensor(labels)), options

    train, options = rows(400)
    M, w = fit_identity_bilinear(train, options, probe_rows=100, l2=0.3)
    held, _ = rows(100)
    hits = 0
    for x, r, y in zip(held.x, held.roles, held.labels):
        ends = x[line_ends(r)]
        hits += int((x[-1] @ M @ ends.T + ends @ w).argmax()) == int(y)
    assert hits >= 95


@pytest.fixture(scope="module")
def attention():
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=96, intermediate_size=32, num_hidden_layers=2, num_attention_heads=3,
                         num_key_value_heads=1, head_dim=32, rope_theta=100000.0, attn_implementation="eager")
    model = get_peft_model(LlamaForCausalLM(config), graft_lora(1, 3, 32))
    return model, model.get_decoder().layers[1].self_attn


def random_head(hidden: int, rank: int) -> Head:
    g = torch.Generator().manual_seed(1)
    probes = {"g": torch.randn(hidden, generator=g), "P": torch.randn(26, hidden, generator=g) * 0.1,
              "p": torch.randn(26, generator=g)}
    return Head(torch.randn(hidden, hidden, generator=g) * 0.05, torch.randn(hidden, generator=g) * 0.1, probes, rank, 0.5, 3.0)


def test_the_written_head_attends_as_the_fitted_form(attention):
    model, attn = attention
    H, T, h = 96, 12, 1
    head = random_head(H, 3)
    x = torch.randn(T, H)
    mu, sd = torch.randn(H) * 0.1, torch.rand(H) + 0.5
    write_head(attn, head, h, query_map(head, mu, sd), mu, sd, last_mean=x[-1], letter_dirs=torch.randn(H, 26))
    cos, sin = model.get_decoder().rotary_emb(x[None], torch.arange(T)[None])
    with torch.no_grad():
        _, weights = attn(x[None], position_embeddings=(cos, sin), attention_mask=None)
        xt = (x - mu) / sd
        fitted = torch.softmax(head.scores(xt[None], xt[-1][None])[0], -1)
    assert torch.allclose(weights[0, h, -1], fitted, atol=2e-3)


def test_the_written_values_and_output_block_carry_the_letters(attention):
    model, attn = attention
    H, h = 96, 1
    head = random_head(H, 3)
    mu, sd = torch.zeros(H), torch.rand(H) + 0.5
    dirs = torch.randn(H, 26)
    write_head(attn, head, h, query_map(head, mu, sd), mu, sd, last_mean=torch.randn(H), letter_dirs=dirs)

    def merged(proj):
        lora = getattr(attn, proj)
        return lora.base_layer.weight + lora.lora_B["default"].weight @ lora.lora_A["default"].weight * lora.scaling["default"]

    with torch.no_grad():
        assert torch.allclose(merged("v_proj")[:26], head.P / sd, atol=1e-5)  # group 0's first 26 value dims
        block = merged("o_proj")[:, h * 32:(h + 1) * 32]
        assert torch.allclose(block[:, :26], dirs * head.beta, atol=1e-5) and block[:, 26:].abs().max() < 1e-5
        assert torch.allclose(merged("q_proj")[h * 32:(h + 1) * 32][[d for d in range(32) if d not in slow_rotary_dims(32, 4)]],
                              torch.zeros(28, H), atol=1e-5)  # the head's own query is gone
        assert torch.allclose(letter_bias(head, mu, sd), head.bias + head.beta * head.p)


@pytest.mark.parametrize("keys, query", [("identity", "last"), ("option", "last"), ("identity", "below")])
def test_the_graft_run_exports_an_arm_that_answers_as_it_measured_and_a_warmup_continues(tmp_path, keys, query):
    """main(): fits on a tiny real-shaped base (head dim 32), writes, exports; the arm loads hash-checked, its
    val reading is what its Decider says, and train.decision_smollm2's warmup continues from it (--top_layers 1,
    or 2 when the layer below hands the head its query)."""
    import subprocess
    import sys

    from core.decision.data.store import read_partition
    from safetensors.torch import load_file

    from core.decision.export.adapter import load_adapter_decider, read_adapter_card
    from core.decision.questions import Choice
    from tests.fixtures.tiny_adapter_arm import build_tiny_llama
    from train.decision_graft import GraftConfig, main
    from train.decision_natural_data import NaturalDataConfig, main as natural
    from train.decision_smollm2 import SmolConfig, main as smol, pool

    base = build_tiny_llama(tmp_path / "base", hidden_size=96, num_attention_heads=3, num_key_value_heads=1, head_dim=32,
                            num_hidden_layers=2, intermediate_size=32)
    natural(NaturalDataConfig(out=tmp_path / "natural", tickets={"train": 20, "val": 6, "test": 4}, seed=0))
    synthetic = tmp_path / "synthetic"
    subprocess.run([sys.executable, "-m", "train.decision_data", "--out", str(synthetic), "--format", "2", "--warmup", "8",
                    "--rl", "2", "--val", "4", "--test", "2", "--cued-format", "0", "--cued-warmup", "0", "--cued-rl", "0",
                    "--probe-per-kind", "1"], check=True, capture_output=True)
    data = dict(base=str(base), natural=str(tmp_path / "natural"), synthetic=str(synthetic), val_rows=6, threads=1)
    log = main(GraftConfig(out=str(tmp_path / "runs" / "graft"), rows=16, probe_rows=8, rank=3, head=1, steps=3, keys=keys,
                           query=query, below_rank=4, **data))
    assert log["config"]["keys"] == keys
    top = 2 if query == "below" else 1
    assert read_adapter_card(tmp_path / "runs" / "graft" / "model").layers == list(range(2 - top, 2))
    arm = tmp_path / "runs" / "graft" / "model"
    assert 0 <= log["val_written"]["accuracy"] <= 1 and (tmp_path / "runs" / "graft" / "graft_log.json").is_file()
    decider = load_adapter_decider(arm)
    val = pool(SmolConfig(natural_share=0.6, **data), "val", 6)
    hits = [max(p := decider.decide(r.state, [Choice(r.question, r.options)])[0].probs, key=p.get) == r.options[r.label]
            for r in val]
    assert sum(hits) / len(hits) == pytest.approx(log["val_written"]["accuracy"])
    row = read_partition(tmp_path / "natural", "val")[0]
    smol(SmolConfig(stage="warmup", init=str(arm), out=str(tmp_path / "runs" / "warmup"), rows=8, natural_share=0.5,
                    top_layers=top, train_top=1, steps=1, batch=4, eval_every=1, lr=1e-2, **data))
    warm = tmp_path / "runs" / "warmup" / "model"
    assert load_adapter_decider(warm).decide(row.state, [Choice(row.question, row.options)])
    before, after = (load_file(str(d / "adapter_model.safetensors")) for d in (arm, warm))
    for name in before:  # --train_top 1: the top layer trains, the one below stays as the graft wrote it
        same = torch.equal(before[name], after[name])
        assert same if ".layers.0." in name else (".layers.1." in name), name
    assert any(not torch.equal(before[k], after[k]) for k in before if ".layers.1." in k)


def test_a_graft_with_an_unknown_key_or_query_design_is_refused_before_any_work():
    from train.decision_graft import GraftConfig, main

    with pytest.raises(ValueError, match="--keys must be one of"):
        main(GraftConfig(keys="idenity"))
    with pytest.raises(ValueError, match="--query one of"):
        main(GraftConfig(query="mean"))


def test_more_trained_layers_than_adapted_ones_are_refused():
    from train.decision_smollm2 import SmolConfig

    with pytest.raises(ValueError, match=r"train_top in \[0, top_layers = 2\], got 3"):
        SmolConfig(top_layers=2, train_top=3)
