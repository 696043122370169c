"""Episode -> chat messages and per-field marks, from the record alone."""

from pathlib import Path

import pytest

from core.runs.episode_log import read_episodes
from core.records import ToolCall, Turn
from core.runs.transcripts import chat_messages, episode_header, field_marks, marks_frame, values_match

RUNS = Path(__file__).parents[2] / "fixtures" / "replay_runs" / "fixture-set"


@pytest.fixture
def guess():
    return {e.scenario.id: e for e in read_episodes(RUNS / "guess" / "episodes.jsonl").episodes}


def test_chat_has_request_questions_answers_calls_and_verdict(guess):
    ep = guess["seed1_meeting_scheduling_easy"]
    msgs = chat_messages(ep)
    assert msgs[0] == {"role": "user", "content": ep.scenario.request}
    assert msgs[1]["content"] == "What date do you want?"
    block = msgs[2]
    assert block["metadata"]["title"].startswith("ask_question → revealed `date`")
    assert "+0.05" in block["metadata"]["title"] and block["metadata"]["status"] == "done"
    assert msgs[3] == {"role": "user", "content": "tomorrow."}
    assert msgs[4]["content"].startswith("**Proposes a plan**") and '"platform": "zoom"' in msgs[4]["content"]
    assert f"score {ep.score:.3f}" in msgs[5]["metadata"]["title"]
    assert "Episode ended: plan" in msgs[-1]["content"]


def test_a_question_that_matches_nothing_says_so(guess):
    title = chat_messages(guess["seed2_event_planning_medium"])[2]["metadata"]["title"]
    assert title.startswith("ask_question → revealed nothing: no field of this user") and "+0.02" in title


def test_unparseable_turn_is_shown_with_its_reason(guess):
    msgs = chat_messages(guess["seed6_meeting_scheduling_hard"])
    bad = [m for m in msgs if "No parseable tool call" in m["content"]]
    assert len(bad) == 1 and "> I think we should meet on friday." in bad[0]["content"]
    assert "format gate **failed**" in msgs[-1]["content"]


def test_a_plan_too_deep_to_parse_is_shown_as_its_text(guess):
    ep = guess["seed1_meeting_scheduling_easy"]
    turns = [t.model_copy(update={"call": ToolCall(name="propose_plan", arguments={"plan": "[" * 50_000})})
             if t.call is not None and t.call.name == "propose_plan" else t for t in ep.turns]
    msgs = chat_messages(ep.model_copy(update={"turns": turns}))  # json.loads would raise RecursionError
    plan = next(m["content"] for m in msgs if m["content"].startswith("**Proposes a plan**"))
    assert "[[[[" in plan and "first 10,000 of 50,000 characters" in plan


@pytest.mark.parametrize("result, outcome", [
    ({"answer": "x", "field_revealed": "date"}, "revealed `date`"),       # new field
    ({"answer": "x", "field_revealed": None, "duplicate": True}, "field already revealed"),
    ({"answer": "x", "field_revealed": None}, "revealed nothing"),
    ({"answer": "done", "over_cap": True}, "over budget"),
    ({"error": "episode already ended"}, "error: episode already ended"),
])
def test_ask_outcomes(guess, result, outcome):
    ep = guess["seed1_meeting_scheduling_easy"].model_copy(deep=True)
    ep.turns = [Turn(index=0, raw="ask_question('when?')", result=result,
                     call=ToolCall(name="ask_question", arguments={"question": "when?"}))]
    assert outcome in chat_messages(ep)[2]["metadata"]["title"]


def test_field_marks(guess):
    ep = guess["seed1_meeting_scheduling_easy"]
    marks = {m.field: m for m in field_marks(ep)}
    assert list(marks) == ["date", "time", "participants", "platform"]  # profile first, then extra plan keys
    assert marks["date"].revealed and marks["date"].matched and not marks["date"].hallucinated
    assert marks["time"].planned == "tbd" and not marks["time"].matched and marks["time"].hallucinated
    assert marks["platform"].hidden == "" and marks["platform"].hallucinated and not marks["platform"].matched
    assert marks["date"].critical and not marks["platform"].critical
    frame = marks_frame(list(marks.values()))
    assert list(frame.columns) == ["field", "hidden", "plan", "revealed", "matched", "hallucinated"]
    assert frame.iloc[0]["field"] == "★ date" and frame.iloc[1]["hallucinated"] == "⚠"
    assert frame.iloc[3]["hidden"] == "—" and frame.iloc[3]["matched"] == ""


def test_extra_plan_keys_are_listed_after_the_profile(guess):
    ep = guess["seed3_support_triage_easy"]  # plan holds required keys the profile lacks
    marks = field_marks(ep)
    extra = [m for m in marks if m.field not in ep.scenario.hidden_profile]
    assert [m.field for m in extra] == ["item_issue", "refund_or_replace", "platform"]
    assert all(m.hidden == "" and not m.matched for m in extra)


@pytest.mark.parametrize("rubric, field, planned, hidden, expected", [
    ("v1", "venue", "Office", "office", True),             # case-insensitive
    ("v1", "venue", "At a office.", "office", False),      # v1 cannot read the simulator's phrasing
    ("v2", "venue", "At a office.", "office", True),       # v2 can
    ("v1", "guest_count", "20", 20, True),                 # numbers as text
    ("v2", "no_such_field", "x", "x", False),              # v2 needs a known field
])
def test_values_match_follows_the_rubric(rubric, field, planned, hidden, expected):
    assert values_match(rubric, field, planned, hidden) is expected


def test_header_names_run_policy_and_outcome(guess):
    text = episode_header(guess["seed6_meeting_scheduling_hard"], "fixture-set/guess")
    assert "gate ✗" in text and "unparseable" in text and "`fixture-set/guess`" in text


def test_zero_components_are_explained(guess):
    """The unparseable guess episode: gate failed, so every 0 gets its reason."""
    from core.runs.transcripts import zero_reasons

    episode = guess["seed6_meeting_scheduling_hard"]
    reasons = zero_reasons(episode)
    assert "forced to 0" in reasons["score"]
    assert reasons["FormatCheckRubric"] == "no plan parsed to a JSON object"
    assert set(reasons) - {"score"} == {k for k, v in episode.breakdown.components.items() if v == 0}


@pytest.mark.parametrize("text, absent, present", [
    ("<img src=http://h/x>", "<img", "&lt;img"),                   # no HTML element
    ("[Sign in](http://h/login)", "[Sign in](", "\\[Sign in\\]"),   # no markdown link
    ("![x](http://h/i.png)", "![", "\\!\\["),                       # no markdown image
    ("# Session expired", "\n#", "\\# Session"),                  # no heading (checked at the start too)
    ("see http://h/auto or www.h.com", "http://", "http\\://"),     # no autolink
    ("**bold** and _em_", "**bold**", "\\*\\*bold\\*\\*"),          # no emphasis
    ("1. first\n- item", "\n- item", "1\\. first"),                 # no list
    ("    indented code", "    indented", "indented code"),        # no code block
    ("snake_case_name a&b", "&b", "snake_case_name a&amp;b"),      # readable words, no entity
])
def test_inert_text_makes_no_markup(text, absent, present):
    from core.runs.transcripts import inert

    out = inert(text)
    assert absent not in out and present in out and not out.startswith(("#", "-", "<", "!"))


def test_code_and_fence_cannot_be_closed_from_inside():
    from core.runs.transcripts import code, fenced

    assert code("a`b") == "``a`b``" and code("`x") == "`` `x ``"
    block = fenced("x\n```\n<img src=y>")
    assert block.startswith("````\n") and block.endswith("\n````")


@pytest.mark.parametrize("text, out", [
    ("<a href=x>y</a>", "&lt;a href=x&gt;y&lt;/a&gt;"),        # a tag plotly would draw as a link
    ("50% %{x}", "50&#37; &#37;{x}"),                         # a template value plotly would substitute
    ("a & b", "a &amp; b"),                                   # an entity stays literal
    ("FieldMatch", "FieldMatch"),                             # plain names are untouched
])
def test_plot_text_table(text, out):
    from core.runs.transcripts import plot_text

    assert plot_text(text) == out


def test_an_overlong_field_is_cut_for_display_with_its_full_length():
    from core.runs.transcripts import SHOWN_CHARS, code, fenced, inert, shown

    word = "x" * 1_000_000  # one 1 MB word: the browser took 218 s to lay it out
    for render in (shown, inert, code, fenced):
        out = render(word)
        assert len(out) < SHOWN_CHARS + 100 and "the first 10,000 of 1,000,000 characters" in out
    assert shown("short") == "short"


def test_a_value_a_cued_request_names_for_certain_is_not_made_up():
    from core.clarify.families import FIELDS
    from core.clarify.scenarios import load_cued
    from core.records import Episode

    scenario = next(s for s in load_cued() if {c.kind for c in s.cues.fields.values()} >= {"clear", "two"})
    clear = next(f for f, c in scenario.cues.fields.items() if c.kind == "clear")
    two = next(f for f, c in scenario.cues.fields.items() if c.kind == "two")
    plan = {f: str(scenario.cues.fields[f].hinted[0]) for f in scenario.required_keys}
    episode = Episode(scenario=scenario, policy="guess", rubric="v3", plan=plan)
    marks = {m.field: m for m in field_marks(episode)}
    assert not marks[clear].hallucinated and not marks[clear].revealed  # taken from the request, not asked
    assert marks[two].hallucinated  # one of two values the request named: a guess
    wrong = dict(plan, **{clear: next(str(v) for v in FIELDS[clear].values if v != scenario.cues.fields[clear].hinted[0])})
    assert {m.field: m for m in field_marks(episode.model_copy(update={"plan": wrong}))}[clear].hallucinated


def test_marks_follow_what_the_rubric_judges():
    """v2 does not judge "unknown" for a key the user cannot know, and does judge keys outside the family."""
    from core.clarify.families import FAMILIES
    from core.clarify.scenarios import generate_scenario
    from core.records import Episode

    scenario = generate_scenario(50000, "easy")
    spare = next(f for f in FAMILIES[scenario.family].fields if f not in scenario.hidden_profile)
    plan = {spare: "unknown", "mood": "cheerful"}
    for rubric, unknown_marked, extra_marked in (("v1", True, False), ("v2", False, True)):
        marks = {m.field: m for m in field_marks(Episode(scenario=scenario, policy="guess", rubric=rubric, plan=plan))}
        assert (marks[spare].hallucinated, marks["mood"].hallucinated) == (unknown_marked, extra_marked), rubric


def test_an_empty_value_the_rubric_judges_says_so():
    """Submitting the template with every value empty: the rubric still judges each key, and the mark says the value
    was empty rather than only "made up"."""
    from core.clarify.rubrics import hallucination_check
    from core.clarify.scenarios import generate_scenario
    from core.records import Episode

    scenario = generate_scenario(50000, "easy")
    plan = dict.fromkeys(scenario.hidden_profile, "")
    episode = Episode(scenario=scenario, policy="guess", rubric="v1", plan=plan)
    frame = marks_frame(field_marks(episode))
    assert hallucination_check(scenario, plan, []) == 0.0
    assert set(frame["hallucinated"]) == {"⚠ (empty, still judged)"} and set(frame["plan"]) == {"—"}


def test_marks_count_what_hallucination_check_scores_on_every_shipped_episode():
    from core.clarify.rubrics import judged_keys

    logs = sorted((Path(__file__).parents[3] / "replays").glob("*/*/episodes.jsonl"))
    checked = 0
    for log in logs:
        for ep in read_episodes(log).episodes:
            if ep.rubric not in ("v1", "v2") or ep.breakdown is None or ep.scenario.cues is not None:
                continue
            judged = judged_keys(ep.scenario, ep.plan, ep.rubric)
            marked = sum(m.hallucinated for m in field_marks(ep))
            expected = (len(judged) - marked) / len(judged) if judged else 1.0
            assert ep.breakdown.components["HallucinationCheckRubric"] == pytest.approx(expected), (log, ep.scenario.id)
            checked += 1
    assert checked > 1000
