"""Run summaries: the share of turns cut inside a tool call (the other keys: test_eval.py)."""

import pytest

from core.clarify.scenarios import load_scenarios
from core.runs.eval import run_eval
from core.runs.summary import CutShare, cut_share, summarize

CLOSED = '<tool_call>\n{"name": "get_task_info", "arguments": {}}\n</tool_call>'
CUT = '<tool_call>\n{"name": "propose_plan", "arguments": {"plan": "{\\"date\\": \\"to'


@pytest.fixture(scope="module")
def episodes():
    """Three oracle episodes (scripted turns: every call closed)."""
    return run_eval("oracle", load_scenarios("clarifyrl-heldout", limit=3))


def with_raws(episode, raws):
    """``episode`` with its first turns' raw text replaced by ``raws``."""
    turns = [t.model_copy(update={"raw": r}) for t, r in zip(episode.turns, raws)] + episode.turns[len(raws):]
    return episode.model_copy(update={"turns": turns})


@pytest.mark.parametrize("raws, cut, episodes_cut", [
    ([[], [], []], 0, 0),  # scripted turns close every call
    ([[CUT], [], []], 1, 1),  # one cut turn
    ([[CUT, CUT], [CLOSED, CUT], []], 3, 2),  # cut turns counted per turn, episodes once
    ([[CLOSED + "\n" + CUT], [], []], 1, 1),  # a closed call, then a second one cut
])
def test_cut_share_counts_turns_ending_inside_a_call(episodes, raws, cut, episodes_cut):
    run = [with_raws(e, r) for e, r in zip(episodes, raws)]
    turns = sum(len(e.turns) for e in episodes)
    assert cut_share(run) == CutShare(turns=turns, cut=cut, episodes=episodes_cut, share=cut / turns)
    assert summarize(run).cut == cut_share(run)  # every summary states it


def test_a_run_without_turns_cuts_nothing(episodes):
    assert cut_share([e.model_copy(update={"turns": []}) for e in episodes]) == CutShare(
        turns=0, cut=0, episodes=0, share=0.0)
