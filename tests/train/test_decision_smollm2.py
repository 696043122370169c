"""The SmolLM2 decision arms' training on a tiny random Llama base: the cached split is exact, and
warmup -> RLCD exports adapter arms that load (hash-checked) and answer as training read them."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from core.decision.export.adapter import DecisionExportError, load_adapter_decider
from core.decision.batches import Prompt, collate, tokenize_prompts
from core.decision.data.rows import NOTA
from core.decision.data.store import read_partition
from core.decision.prompt import letter_token_ids
from core.decision.questions import Choice, Noul, Score
from core.decision.readout import option_logits
from tests.fixtures.tiny_adapter_arm import build_tiny_llama
from train.decision_smollm2 import SmolConfig, main, probs_of
from train.split_body import SplitBody

@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def natural_data(tmp_path_factory) -> Path:
    from train.decision_natural_data import NaturalDataConfig, main as build

    out = tmp_path_factory.mktemp("natural")
    build(NaturalDataConfig(out=out, tickets={"train": 40, "val": 8, "test": 8}, seed=0))
    return out


PROMPTS = [Prompt("My card was charged twice for one order.", "Which team?", ("billing", "security", "support")),
           Prompt("Site down since 9am!", "Page someone?", ("true", "false"))]


def test_the_cached_split_equals_the_whole_body(tiny_base):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_base)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_base),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                      layers_to_transform=[2, 3], init_lora_weights=False))
    rows = model.get_output_embeddings().weight[torch.tensor(letter_token_ids(tok))].detach().float()
    split = SplitBody.of(model.get_decoder(), 2)
    ids = tokenize_prompts(tok, PROMPTS)
    assert len(ids[0]) != len(ids[1])  # the cache batch pads one of them
    cached = split.logits(split.hidden(ids), torch.tensor([3, 2]), rows)
    batch = collate(ids, [3, 2], tok.pad_token_id)
    with torch.no_grad():
        whole = option_logits(model.get_decoder(), batch.input_ids, batch.attention_mask, rows, batch.n_options)
    assert torch.allclose(cached, whole, atol=1e-5)
    assert len(split.lower.layers) == 2 and len(model.get_decoder().layers) == 4  # views, not copies


def test_warmup_then_rlcd_export_arms_that_load_and_answer_as_trained(tiny_base, natural_data, tmp_path):
    common = dict(base=str(tiny_base), natural=str(natural_data), natural_share=1.0, rows=24, val_rows=6,
                  top_layers=2, rank=4, alpha=8, steps=2, batch=8, eval_every=1, threads=1)
    main(SmolConfig(stage="warmup", out=str(tmp_path / "warmup"), **common))
    warm = tmp_path / "warmup" / "model"
    main(SmolConfig(stage="rlcd", init=str(warm), out=str(tmp_path / "rlcd"), **common))
    arm = tmp_path / "rlcd" / "model"
    card = json.loads((arm / "decision.json").read_text())
    assert card["format"] == "clarifylab-decision-adapter-v1" and card["layers"] == [2, 3]
    assert card["training"]["recipe"].endswith("r = c - p_a") and card["training"]["init"] == str(warm)
    log = [json.loads(line) for line in (tmp_path / "rlcd" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "step" in r and "accuracy" in r] == [0, 1, 2]

    decider = load_adapter_decider(arm)
    answer = decider.decide(PROMPTS[0].state, [Choice(PROMPTS[0].question, list(PROMPTS[0].options))])[0]
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_base), arm).eval()
    rows = load_file(arm / "decision_head.safetensors")["weight"]
    split = SplitBody.of(model.get_decoder(), 2)
    trained = probs_of(split, rows, split.hidden(tokenize_prompts(decider.tokenizer, PROMPTS[:1])), PROMPTS[:1])
    assert list(answer.probs.values()) == pytest.approx(list(trained[0, :3]), abs=1e-5)


def test_a_changed_adapter_file_is_refused(tiny_base, natural_data, tmp_path):
    main(SmolConfig(stage="warmup", out=str(tmp_path / "w"), base=str(tiny_base), natural=str(natural_data),
                    natural_share=1.0, rows=8, val_rows=3, top_layers=1, rank=2, alpha=4, steps=1, batch=4,
                    eval_every=1, threads=1))
    arm = tmp_path / "w" / "model"
    head = arm / "decision_head.safetensors"
    head.write_bytes(head.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(DecisionExportError, match="decision_head.safetensors: sha256 does not match"):
        load_adapter_decider(arm)


def test_eval_and_ship_over_tiny_arms(tiny_base, natural_data, tmp_path):
    """train/decision_smollm2_eval.py scores every arm and the zero-shot base from one cache (the cache's
    exactness is tested above); train/decision_smollm2_ship.py copies an arm with its card and records,
    and the copy answers as the run's export."""
    import subprocess
    import sys

    from train import decision_smollm2_eval as ev
    from train import decision_smollm2_ship as ship

    synthetic = tmp_path / "synthetic"
    subprocess.run([sys.executable, "-m", "train.decision_data", "--out", str(synthetic), "--format", "2", "--warmup", "2",
                    "--rl", "2", "--val", "2", "--test", "4", "--cued-format", "0", "--cued-warmup", "0", "--cued-rl", "0",
                    "--probe-per-kind", "3"], check=True, capture_output=True)
    common = dict(base=str(tiny_base), natural=str(natural_data), natural_share=1.0, rows=12, val_rows=6,
                  top_layers=2, rank=2, alpha=4, steps=1, batch=6, eval_every=1, threads=1)
    for stage in ("warmup", "rlcd"):
        main(SmolConfig(stage=stage, out=str(tmp_path / "runs" / stage), **common,
                        **({"init": str(tmp_path / "runs" / "warmup" / "model")} if stage == "rlcd" else {})))
    arms = f"warmup={tmp_path}/runs/warmup/model,rlcd={tmp_path}/runs/rlcd/model"
    report = ev.main(ev.SmolEvalConfig(arms=arms, base=str(tiny_base), natural=str(natural_data), synthetic=str(synthetic),
                                       synthetic_rows=6, probe_rows=6, tiny="", cache=str(tmp_path / "cache"),
                                       json=str(tmp_path / "eval.json"), resamples=50, threads=1))
    assert set(report["natural"]) == {"zero-shot", "warmup", "rlcd"} and report["rows"]["natural"] == 24
    assert "natural:rlcd-warmup" in report["paired"]
    rlcd = load_adapter_decider(tmp_path / "runs" / "rlcd" / "model")
    row = read_partition(natural_data, "test")[0]
    answer = rlcd.decide(row.state, [Choice(row.question, row.options)])[0]
    assert report["natural"]["rlcd"]["by_kind"]["choice"]["rows"] == 8  # department rows of the 8 test tickets
    shipped = ship.main(ship.ShipConfig(runs=str(tmp_path / "runs"), eval=str(tmp_path / "eval.json"),
                                        checkpoints=str(tmp_path / "ck"), arms="rlcd"))
    card = (shipped[0] / "README.md").read_text()
    assert "--stage rlcd" in card and "natural held-out tickets" in card and "rank 2" in card and (shipped[0] / "training_log.jsonl").is_file()
    assert f"Data: {natural_data} (`python -m train.decision_natural_data --out {natural_data} --seed 0`)" in card
    assert load_adapter_decider(shipped[0]).decide(row.state, [Choice(row.question, row.options)])[0].probs == answer.probs
    assert "## Choices read in every order" not in card
    cyclic = ship.main(ship.ShipConfig(runs=str(tmp_path / "runs"), eval=str(tmp_path / "eval.json"),
                                       checkpoints=str(tmp_path / "ck-cyclic"), arms="rlcd", choice_orders="cyclic"))[0]
    assert json.loads((cyclic / "decision.json").read_text())["choice_orders"] == "cyclic"
    assert "## Choices read in every order" in (cyclic / "README.md").read_text()
    assert load_adapter_decider(cyclic).choice_orders == "cyclic"


def test_an_rl_stage_refuses_a_split_that_would_cache_adapted_layers(tiny_base, natural_data, tmp_path):
    from tests.fixtures.tiny_adapter_arm import export_tiny_arm

    arm = export_tiny_arm(tmp_path / "arm", tiny_base)  # adapts layers 2 and 3
    with pytest.raises(ValueError, match=r"adapts layers \[2, 3\]; --top_layers 1"):
        main(SmolConfig(stage="rlcd", init=str(arm), out=str(tmp_path / "rl"), base=str(tiny_base),
                        natural=str(natural_data), natural_share=1.0, rows=6, val_rows=3, top_layers=1, steps=1,
                        batch=3, threads=1))


def test_the_summary_table_gives_per_question_accuracy_on_natural_rows_only():
    from train.decision_smollm2_eval import summary_table

    arm = {"accuracy": 0.5, "ece": 0.1, "brier": 0.6, "mean_confidence": 0.55,
           "by_kind": {"choice": {"accuracy": 0.25}, "score": {"accuracy": 0.5}, "noul": {"accuracy": 0.75}}}
    table = summary_table({"natural": {"rlcd": arm}, "synthetic": {"rlcd": arm}}).splitlines()
    assert table[2] == "| rlcd | natural | 0.500 | 0.100 | 0.600 | 0.550 | 0.250 | 0.500 | 0.750 |"
    assert table[3] == "| rlcd | synthetic | 0.500 | 0.100 | 0.600 | 0.550 | - | - | - |"


def test_the_warmup_pool_holds_its_share_of_binding_drills(natural_data):
    from train.decision_smollm2 import pool

    config = SmolConfig(natural=str(natural_data), natural_share=0.5, drill_share=0.5, rows=20, val_rows=6)
    train = pool(config, "train", 20)
    assert [r.source for r in train].count("drill") == 10 and [r.source for r in train].count("natural") == 10
    drills = [r for r in train if r.source == "drill"]  # the answer is in the record, or is "None of the above"
    assert all(r.options[r.label] in r.state or r.options[r.label] == NOTA for r in drills)
    assert pool(config, "train", 20) == train  # seeded
    with pytest.raises(ValueError, match=r"drill_share in \[0, 1 - natural_share = 0.5\]"):
        SmolConfig(natural_share=0.5, drill_share=0.6)
    binding = pool(SmolConfig(natural=str(natural_data), natural_share=0.0, drill_share=1.0, drill_easy_share=1.0), "train", 12)
    assert all("easy" in r.tags and len(r.options) <= 3 for r in binding)  # the first rung only


def test_warmup_and_rl_pools_hold_different_natural_tickets(natural_data):
    from train.decision_smollm2 import pool

    config = SmolConfig(natural=str(natural_data), natural_share=1.0, rows=30, init="arm")
    warm, rl = pool(config, "train", 30), pool(config, "rl", 30)
    assert len(rl) == 30 and not {r.context_id for r in warm} & {r.context_id for r in rl}


def test_a_card_names_the_phrasebook_its_natural_tickets_were_drawn_from(tmp_path):
    from train.decision_natural_data import NaturalDataConfig, main as build
    from train.decision_smollm2_ship import flags, natural_data, pipeline_env

    build(NaturalDataConfig(out=tmp_path / "v2", tickets={"train": 4, "val": 1, "test": 1}, phrasebook="v2"))
    assert natural_data({"natural": str(tmp_path / "v2")}) == \
        f"{tmp_path / 'v2'} (`python -m train.decision_natural_data --out {tmp_path / 'v2'} --seed 0 --phrasebook v2`)"
    assert natural_data({}) == "runs/data/natural (`python -m train.decision_natural_data --out runs/data/natural --seed 0`)"
    assert pipeline_env({"natural": str(tmp_path / "v2")}) == f"PHRASEBOOK=v2 NATURAL={tmp_path / 'v2'} " and pipeline_env({}) == ""
    build(NaturalDataConfig(out=tmp_path / "fresh", tickets={"train": 4, "val": 1, "test": 1}, phrasebook="fresh"))
    handed_down = {"top_layers": 2, "stage": "warmup"}
    rl = {"top_layers": 2, "stage": "rlcd", "natural": str(tmp_path / "fresh")}
    assert pipeline_env(handed_down, rl) == f"QUERY=below RL_PHRASEBOOK=fresh RL_NATURAL={tmp_path / 'fresh'} "
    assert pipeline_env(handed_down) == pipeline_env(handed_down, handed_down) == "QUERY=below "
    assert flags({"rows": 3, "natural": str(tmp_path / "v2")}) == f"--rows 3 --natural {tmp_path / 'v2'}"
    assert flags({"rows": 3, "natural": "runs/data/natural"}) == "--rows 3"


def test_the_evaluation_reads_an_arm_as_its_card_says_choices_are_read(tiny_base, natural_data, tmp_path):
    """An arm whose card reads choices in every cyclic order is scored as its Decider answers (and the zero-shot
    base and an arm as given beside it as before)."""
    import shutil

    from core.decision.export.adapter import set_choice_orders
    from tests.fixtures.tiny_adapter_arm import export_tiny_arm
    from train import decision_smollm2_eval as ev

    plain = export_tiny_arm(tmp_path / "plain", tiny_base)
    cyclic = shutil.copytree(plain, tmp_path / "cyclic")
    set_choice_orders(cyclic, "cyclic")
    rows = read_partition(natural_data, "test")[:6]  # two tickets: department, priority, page-now
    config = ev.SmolEvalConfig(arms=f"plain={plain},cyclic={cyclic}", base=str(tiny_base), tiny="",
                               cache=str(tmp_path / "cache"), threads=1)
    probs = ev.arm_probs(config, {"natural": rows})
    for name, folder in (("plain", plain), ("cyclic", cyclic)):
        decider = load_adapter_decider(folder)
        for i, row in enumerate(rows):
            q = {"choice": Choice, "score": Score, "noul": Noul}[row.kind](row.question, row.options)
            answer = decider.decide(row.state, [q])[0]
            assert list(answer.probs.values()) == pytest.approx(list(probs[name]["natural"][i, : len(row.options)]), abs=1e-5)
    department = [i for i, r in enumerate(rows) if r.kind == "choice"]
    others = [i for i, r in enumerate(rows) if r.kind != "choice"]
    assert not np.allclose(probs["cyclic"]["natural"][department], probs["plain"]["natural"][department], atol=1e-4)
    assert np.allclose(probs["cyclic"]["natural"][others], probs["plain"]["natural"][others], atol=1e-6)
