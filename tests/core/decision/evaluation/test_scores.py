"""What a shipped decision model measured, read back from the committed evaluations."""

from core.decision.evaluation.scores import COMMITTED, measured
from core.models.entries import shipped_entries

def test_every_shipped_decision_model_shows_what_its_committed_evaluation_measured(tmp_path):
    shipped = {e.key for e in shipped_entries(kind="decision")}
    assert set(COMMITTED) == shipped - {"decision-smollm2-pooled-cued"}  # the agent's reader: never measured on tickets
    for key in COMMITTED:
        found = measured(key)
        assert len(found) == len(COMMITTED[key]), key  # every source read
        for m in found:
            assert m.accuracy.n == m.ece.n > 0 and m.accuracy.lo <= m.accuracy.mean <= m.accuracy.hi
    # the README's headline rows, read from the same files (tests/test_claims.py checks those against them)
    pooled, = [m for m in measured("decision-smollm2-pooled-rlcd") if m.rows.startswith("natural")]
    assert (round(pooled.accuracy.mean, 3), round(pooled.ece.mean, 3), pooled.accuracy.n) == (0.714, 0.099, 1200)
    letter, = [m for m in measured("decision-smollm2-rlcd") if m.rows.startswith("natural")]
    assert (round(letter.accuracy.mean, 3), round(letter.ece.mean, 3)) == (0.738, 0.069)
    tiny = measured("decision-rlcd")
    assert [(m.accuracy.n, round(m.ece.hi, 3)) for m in tiny] == [(8001, 0.025), (1200, 0.348)]
    option, = measured("option-scorer")  # accuracy and ECE over the same rows, missing answers included
    assert (round(option.accuracy.mean, 3), round(option.ece.mean, 3), option.accuracy.n) == (0.866, 0.033, 7931)
    assert measured("my-own-export") == [] and measured("decision-rlcd", results=tmp_path) == []
    (tmp_path / "decision_eval.json").write_text('{"arms": {"rlcd": {"intervals": {}}}}', encoding="utf-8")
    assert measured("decision-rlcd", results=tmp_path) == []  # a file without the figures claims nothing
