"""The rule-based simulated user: which field a question asks about, and how the user answers.

v1 is the published rule: the question (lower-cased, whitespace collapsed) is searched for every
keyword of the scenario's profile fields as a plain substring, and the field with the LONGEST
matching keyword wins (ties: the first found, scanning profile fields in profile order and keywords
in table order). v2 keeps that rule but a keyword must stand on word boundaries, so "usage" no
longer reveals age and "update" no longer reveals date; it may still carry a short inflection
(``INFLECTIONS``: "guests" asks about guest, "deployed" about deploy).
"""

import re
from functools import lru_cache
from typing import Iterable, Literal

from core.clarify.families import FAMILIES, FIELDS

SimVersion = Literal["v1", "v2"]
INFLECTIONS = ("s", "es", "d", "ed", "ing", "ment", "ments", "ence")
"""Suffixes a v2 keyword may carry and still count as that word."""

_WS = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    """Lower-case and collapse runs of whitespace to one space (both versions)."""
    return _WS.sub(" ", text.lower()).strip()


@lru_cache(maxsize=None)
def keyword_pattern(keyword: str) -> re.Pattern:
    """v2 matcher for one keyword: word boundaries at its alphanumeric ends, optional inflection."""
    head = r"(?<![a-z0-9])" if keyword[0].isalnum() else ""
    if keyword[-1].isalnum():
        tail = "(?:" + "|".join(INFLECTIONS) + r")?(?![a-z0-9])"
    else:
        tail = ""
    return re.compile(head + re.escape(keyword) + tail)


def match_field(question: str, fields: Iterable[str], version: SimVersion = "v1") -> str | None:
    """The field a normalised question asks about among ``fields`` (profile order), or None."""
    best, best_len = None, 0
    if version == "v1":
        for name in fields:
            for kw in FIELDS[name].keywords:
                if len(kw) > best_len and kw in question:
                    best, best_len = name, len(kw)
    else:
        for name in fields:
            for kw in FIELDS[name].keywords:
                if len(kw) > best_len and kw in question and keyword_pattern(kw).search(question):
                    best, best_len = name, len(kw)
    return best


@lru_cache(maxsize=4096)
def phrase_answer(field: str, value) -> str:
    """The user's answer revealing ``field = value``, ending in ".", "!" or "?".

    The formatted text is stripped first, as published, so a scenario-file value with surrounding
    spaces (" cloud ") gives "Deploy to  cloud." and never a space before the full stop.
    """
    text = FIELDS[field].phrasing.format(value=value).strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def no_match_reply(family: str) -> str:
    """What the user says when a question matches no profile field."""
    return FAMILIES[family].no_match_reply


def respond(profile: dict, family: str, question: str, version: SimVersion = "v1") -> tuple[str, str | None]:
    """Answer a (already length-capped) question: (answer text, matched field or None).

    The matched field is returned even when it was revealed before; the environment decides
    what a repeat is worth.
    """
    field = match_field(normalise_question(question), profile, version)
    if field is None:
        return no_match_reply(family), None
    return phrase_answer(field, profile[field]), field
