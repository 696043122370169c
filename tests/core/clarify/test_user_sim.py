"""Simulated user: normalisation, longest-keyword rule, tie-breaks, v2 word boundaries, phrasing."""

import pytest

from core.clarify.user_sim import match_field, normalise_question, phrase_answer, respond

EVENT = ("event_type", "guest_count", "venue", "date", "budget_band", "theme", "dietary_constraints")
MEDICAL = ("primary_symptom", "duration", "severity", "age_band", "prior_conditions", "medications")
MEETING = ("participants", "date", "time", "duration_minutes", "platform")


@pytest.mark.parametrize("question,fields,version,expected", [
    # plain keyword
    ("how many guests?", EVENT, "v1", "guest_count"),
    # longest keyword wins: "what kind of event" (18) beats "kind" and "where" is absent
    ("what kind of event, and where?", EVENT, "v1", "event_type"),
    # longest wins across fields: "how much" (budget, 8) vs "where" (venue, 5)
    ("where and how much?", EVENT, "v1", "budget_band"),
    # tie (equal length): the field first in PROFILE order wins; "date"(4) vs "kind"(4)
    ("date kind", ("date", "event_type"), "v1", "date"),
    ("date kind", ("event_type", "date"), "v1", "event_type"),
    # only fields in this profile count
    ("how many guests?", ("event_type", "venue"), "v1", None),
    # v1 plain substring: "usage" reveals age, "update" reveals date (published defect)
    ("what is the usage?", MEDICAL, "v1", "age_band"),
    ("any update?", MEETING, "v1", "date"),
    # v2 word boundaries: those no longer match
    ("what is the usage?", MEDICAL, "v2", None),
    ("any update?", MEETING, "v2", None),
    # v2 end boundary: "agenda" does not ask about age, "kindly" not about the kind of event
    ("any agenda?", MEDICAL, "v2", None),
    ("kindly tell me", EVENT, "v2", None),
    # v2 allows a short inflection: plural "guests", "deployed"
    ("how many guests?", EVENT, "v2", "guest_count"),
    ("how many guest?", EVENT, "v2", "guest_count"),
    ("where is it deployed?", ("stack", "deployment_target"), "v2", "deployment_target"),
    # keyword ending in punctuation needs no end boundary in v2
    ("order #4521 is mine", ("order_id", "item_issue"), "v2", "order_id"),
    # nothing matches
    ("hello there", EVENT, "v1", None),
])
def test_match_field(question, fields, version, expected):
    assert match_field(normalise_question(question), fields, version) == expected


def test_keyword_table_order_breaks_ties_within_a_field():
    # medical "duration" and meeting "duration_minutes" share "how long"; only the profile decides
    assert match_field("how long?", ("duration_minutes", "date"), "v1") == "duration_minutes"


def test_normalise_question():
    assert normalise_question("  How\tMANY\n\n guests? ") == "how many guests?"


@pytest.mark.parametrize("field,value,expected", [
    ("venue", "restaurant", "At a restaurant."),        # final period added
    ("guest_count", 5, "About 5 people."),              # int values formatted
    ("participants", "just me and X", "just me and X."),  # bare phrasing keeps case of the value
    ("stack", "python+fastapi", "I'd like to use python+fastapi."),
])
def test_phrase_answer(field, value, expected):
    assert phrase_answer(field, value) == expected


def test_phrase_answer_keeps_existing_final_punctuation(monkeypatch):
    from core.clarify import user_sim

    phrase_answer.cache_clear()
    try:
        assert user_sim.phrase_answer("item_issue", "late!") == "late!"
        assert user_sim.phrase_answer("item_issue", "late?") == "late?"
        assert user_sim.phrase_answer("item_issue", "late.") == "late."
    finally:
        phrase_answer.cache_clear()


def test_respond_no_match_reply_and_uppercase_question():
    profile = {"event_type": "birthday", "venue": "home"}
    assert respond(profile, "event_planning", "WHERE will it be?") == ("At a home.", "venue")
    assert respond(profile, "event_planning", "Anything else?") == ("Up to you on that one.", None)
