"""Cued clarify requests as decision rows: the agent's own questions, labels from the known posterior."""

import pytest

from core.clarify.cued import field_question
from core.clarify.scenarios import CUED_HELDOUT_SEEDS, generate_cued, generate_scenario
from core.decision.data import DataSpec, build_partition
from core.decision.data.cued import CUED_SEED_BLOCKS, cued_contexts, interleave, scenario_rows

SPEC = DataSpec(contexts={"format": 40, "warmup": 10, "rl": 20, "val": 10, "test": 10},
                cued={"format": 12, "warmup": 3, "rl": 6})


def test_a_scenario_gives_one_row_per_required_field_as_the_agent_asks_it():
    s = generate_cued(5, "hard")
    rows = scenario_rows(s)
    assert [r.question for r in rows] == [field_question(f)[0] for f in s.required_keys]
    for row, field in zip(rows, s.required_keys):
        assert row.state == s.request and row.options == field_question(field)[1] and row.kind == "choice"
        assert row.options[row.label] == str(s.hidden_profile[field]) and row.posterior == s.cues.fields[field].posterior
        assert row.source == "cued" and f"cue_{s.cues.fields[field].kind}" in row.tags


def test_training_partitions_get_their_cued_contexts_and_val_and_test_none():
    for name, n in SPEC.cued.items():
        rows = build_partition(name, SPEC.contexts[name], 0, SPEC)
        assert len({r.context_id for r in rows if r.source == "cued"}) == n
    for name in ("val", "test"):
        assert not [r for r in build_partition(name, SPEC.contexts[name], 0, SPEC) if r.source == "cued"]


def test_adding_cued_rows_keeps_every_other_row_and_its_order():
    plain = build_partition("rl", 20, 0, DataSpec(contexts=SPEC.contexts, cued={}))
    mixed = build_partition("rl", 20, 0, SPEC)
    assert [r for r in mixed if r.source != "cued"] == plain
    first_cued = next(i for i, r in enumerate(mixed) if r.source == "cued")
    assert 0 < first_cued < len(mixed) - 3  # spread among the others, not appended


def test_seed_blocks_are_disjoint_and_clear_of_the_heldout_seeds():
    blocks = list(CUED_SEED_BLOCKS.values())
    for i, a in enumerate(blocks):
        assert not set(a) & set(CUED_HELDOUT_SEEDS)
        for b in blocks[i + 1:]:
            assert not set(a) & set(b)


def test_interleave_spreads_evenly():
    ctx = [[generate_scenario(i, "easy")] for i in range(6)]
    extra = [["x"], ["y"]]
    assert interleave(ctx, extra) == [ctx[0][0], ctx[1][0], ctx[2][0], "x", ctx[3][0], ctx[4][0], ctx[5][0], "y"]


@pytest.mark.parametrize("kwargs, message", [
    ({"cued": {"val": 3}}, "cued contexts go to"),
    ({"cued": {"rl": -1}}, "cued contexts go to"),
])
def test_bad_cued_counts_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataSpec(**kwargs)


def test_more_cued_contexts_than_a_block_holds_is_refused():
    with pytest.raises(ValueError, match="its seed block holds 600"):
        cued_contexts("warmup", 601)
    with pytest.raises(ValueError, match="training partitions"):
        cued_contexts("test", 1)


def test_cue_kinds_keep_only_those_questions_and_the_rest_in_order():
    every = [r for rows in cued_contexts("format", 30) for r in rows]
    clear = [r for rows in cued_contexts("format", 30, ("clear",)) for r in rows]
    assert clear == [r for r in every if r.tags[0] == "cue_clear"]
    assert clear and all(r.posterior[r.label] == 1.0 for r in clear)  # noise-free labels
    spec = DataSpec(contexts={"format": 0}, cued={"format": 30}, cued_kinds=("clear",))
    assert build_partition("format", 0, 0, spec) == clear
    with pytest.raises(ValueError, match="unknown cue kinds"):
        cued_contexts("format", 3, ("loud",))


def test_the_data_command_records_its_cue_kinds(tmp_path):
    from core.decision.data.store import read_manifest, read_partition
    from train.decision_data import main, parse_args

    small = ["--format", "0", "--warmup", "1", "--rl", "1", "--val", "1", "--test", "1", "--probe-per-kind", "1",
             "--cued-format", "20", "--cued-warmup", "0", "--cued-rl", "0"]
    main(parse_args(["--out", str(tmp_path / "clear"), "--cued-kinds", "clear", *small]))
    main(parse_args(["--out", str(tmp_path / "all"), *small]))
    assert read_manifest(tmp_path / "clear").cued_kinds == ["clear"]
    assert read_manifest(tmp_path / "all").cued_kinds == ["none", "clear", "two", "weak"]
    rows = read_partition(tmp_path / "clear", "format")
    assert rows and {r.tags[0] for r in rows} == {"cue_clear"}
