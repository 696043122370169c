"""An episode as a reader sees it: a chat transcript and per-field marks on the plan.

A reader of a run sees a logged episode without stepping any environment: every message
here comes from the ``Episode`` record (turns, results, plan, breakdown). Messages are plain
``{"role", "content", "metadata"}`` dicts, the shape chat widgets take; a ``metadata.title``
marks a collapsible tool-call block.
"""

import html
import json
import re
from dataclasses import dataclass
from typing import Any

from core.clarify.families import FIELDS
from core.records import Episode, Turn
from core.clarify.rubrics import judged_keys, values_equal_v1, values_equal_v2

Message = dict[str, Any]
_INLINE = re.compile(r"[\\`*\[\]!|~$@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?<=[A-Za-z])(?=://)|(?<=www)(?=\.)")
"""Inline markdown: emphasis, code, links, images, tables, maths, autolinks (``://``, ``www.``, ``@``)."""
_BLOCK = re.compile(r"^([#=+\-]|\d+(?=[.)]))")
"""A line start that would open a heading, list, rule or setext underline."""


SHOWN_CHARS = 10_000
"""Longest text shown for one field: a browser lays out a 1 MB word for minutes (218 s measured),
while the longest text a shipped run holds is a few thousand characters (a model's raw turn)."""


PLOT_CHARS = 120
"""Longest text in a figure (a tick label, a legend entry, a hover line): names are a few words."""


def shown(text: Any, limit: int = SHOWN_CHARS) -> str:
    """Text capped for display at ``limit``, with a note of its full length (downloads keep it all)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [shown: the first {limit:,} of {len(text):,} characters]"


def plot_text(text: Any) -> str:
    """Untrusted text for any part of a plotly figure: a title, an axis or tick label, a legend
    entry, an annotation, hover text or a value inside a hovertemplate.

    Plotly reads tags in text (``<a href>``, ``<b>``, ``<span style>``) and substitutes ``%{...}``
    in templates, while it shows entities as characters: ``< > &`` and ``%`` become entities.
    """
    return html.escape(shown(text, PLOT_CHARS), quote=False).replace("%", "&#37;")


def inert(text: Any) -> str:
    """Untrusted text (a URL, an upload, a model or a visitor) as markdown that renders as itself.

    ``<`` ``>`` ``&`` become entities (no HTML element, no blockquote), the characters markdown
    acts on get a backslash (no emphasis, link, image, autolink or table), and each line starts
    as plain text (no heading, list or code block); line breaks stay. Capped by ``shown``.
    """
    lines = []
    for line in shown(text).split("\n"):
        line = _INLINE.sub(lambda m: "\\" + m.group(0) if m.group(0) else "\\", html.escape(line.lstrip(), quote=False))
        lines.append(_BLOCK.sub(lambda m: m.group(0) + "\\" if m.group(0)[0].isdigit() else "\\" + m.group(0), line))
    return "  \n".join(lines)


def code(text: Any) -> str:
    """Untrusted text as an inline code span (shown literally), its fence longer than any backtick run inside."""
    text = shown(text).replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: Any, language: str = "") -> str:
    """Untrusted text as a fenced code block whose fence no run of backticks inside can close."""
    text = shown(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


@dataclass(frozen=True)
class FieldMark:
    """One row of the profile-vs-plan table."""

    field: str
    hidden: str
    """The hidden value, or "" when the field is not in the profile."""
    planned: str
    """The plan's value, or "" when the plan lacks the field."""
    critical: bool
    revealed: bool
    """A question revealed this field during the episode."""
    matched: bool
    """The plan's value equals the hidden one under the rubric's normalisation."""
    hallucinated: bool
    """The rubric judges this plan key (``rubrics.judged_keys``: a v2 "unknown" for a key the user cannot
    know is not judged) but no question revealed it and the request did not name it for certain (a
    cued request's clear cue, ``stated_in_request``): under v1/v2 exactly what costs HallucinationCheck."""


def _block(call: str, result: dict, reward: float, title_tail: str) -> Message:
    body = f"{fenced(call)}\n{fenced(json.dumps(result, indent=1, ensure_ascii=False), 'json')}"
    title = f"{title_tail} · step reward {reward:+.2f}"
    return {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}


NO_REVEAL = "revealed nothing: no field of this user's profile matched the question's words"
"""An answered question that revealed no field (the simulated user matches a question's words to its profile's
fields; a field the family has but this user's profile lacks cannot be revealed)."""


def _ask_messages(turn: Turn) -> list[Message]:
    question = str(turn.call.arguments.get("question", ""))
    res = turn.result
    if "error" in res:
        outcome = f"error: {inert(res['error'])}"
    elif res.get("over_cap"):
        outcome = "over budget, episode ends"
    elif res.get("field_revealed"):
        outcome = f"revealed {code(res['field_revealed'])}"
    elif res.get("duplicate"):
        outcome = "field already revealed"
    else:
        outcome = NO_REVEAL
    out = [{"role": "assistant", "content": inert(question) if question else "(empty question)"},
           _block(turn.raw.strip(), res, turn.reward, f"ask_question → {outcome}")]
    if res.get("answer"):
        out.append({"role": "user", "content": inert(res["answer"])})
    return out


def _plan_messages(episode: Episode, turn: Turn) -> list[Message]:
    plan = turn.call.arguments.get("plan")
    try:
        parsed = json.loads(plan) if isinstance(plan, str) else plan
        shown = json.dumps(parsed, indent=1, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # json recurses once per bracket: "[" * 50000 is text
        shown = str(plan)
    res = {k: v for k, v in turn.result.items() if k not in ("hidden_profile", "breakdown")}
    title = "propose_plan → " + (f"score {turn.result['score']:.3f}" if "score" in turn.result
                                 else f"error: {inert(turn.result.get('error', 'no result'))}")
    return [{"role": "assistant", "content": f"**Proposes a plan**\n{fenced(shown, 'json')}"},
            _block(turn.raw.strip(), res, turn.reward, title)]


def turn_messages(episode: Episode, turn: Turn) -> list[Message]:
    """The chat messages for one agent step."""
    if turn.call is None:
        why = inert(turn.parse_error or "no tool call found")
        quoted = "\n".join("> " + inert(line) for line in (turn.raw.strip() or "(empty)").splitlines())
        return [{"role": "assistant", "content": f"⚠ **No parseable tool call** ({why})\n\n{quoted}"}]
    if turn.call.name == "ask_question":
        return _ask_messages(turn)
    if turn.call.name == "propose_plan":
        return _plan_messages(episode, turn)
    return [_block(turn.raw.strip(), turn.result, turn.reward, f"{inert(turn.call.name)}()")]


def chat_messages(episode: Episode) -> list[Message]:
    """The whole episode as chat messages: request, questions, answers, calls, verdict."""
    messages: list[Message] = [{"role": "user", "content": inert(episode.scenario.request)}]
    for turn in episode.turns:
        messages.extend(turn_messages(episode, turn))
    verdict = f"**{ending(episode).capitalize()}** · score **{episode.score:.3f}**"
    if episode.breakdown is not None:
        verdict += " · format gate " + ("passed" if episode.breakdown.gate_passed else "**failed**")
    if episode.recorded is not None:
        verdict += f" · recorded by {inert(episode.recorded.source)}: {episode.recorded.score:.3f}"
    messages.append({"role": "assistant", "content": verdict})
    return messages


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def values_match(rubric: str, field: str, planned: Any, hidden: Any) -> bool:
    """The episode's rubric's own equality (v2 also accepts the simulator's phrasing)."""
    if rubric == "v1":
        return values_equal_v1(planned, hidden)
    return field in FIELDS and values_equal_v2(field, planned, hidden)


def stated_in_request(episode: Episode) -> set[str]:
    """Plan fields whose value a cued request named for certain (a clear cue): the plan took them from
    the request, so they are not made up, though no question revealed them."""
    cues, plan = episode.scenario.cues, episode.plan or {}
    if cues is None:
        return set()
    return {f for f, cue in cues.fields.items() if cue.kind == "clear" and f in plan
            and values_match(episode.rubric, f, plan[f], cue.hinted[0])}


def field_marks(episode: Episode) -> list[FieldMark]:
    """Hidden profile next to the plan: profile fields first, then extra plan keys."""
    profile = episode.scenario.hidden_profile
    plan = episode.plan or {}
    revealed, stated = set(episode.fields_revealed), stated_in_request(episode)
    unrevealed = set(judged_keys(episode.scenario, plan, episode.rubric)) - revealed - stated
    marks = []
    for name in list(profile) + [k for k in plan if k not in profile]:
        in_plan = name in plan and plan[name] not in (None, "")
        marks.append(FieldMark(
            field=name,
            hidden=_text(profile.get(name)),
            planned=_text(plan.get(name)) if name in plan else "",
            critical=name in episode.scenario.critical_fields,
            revealed=name in revealed,
            matched=bool(in_plan and name in profile
                         and values_match(episode.rubric, name, plan[name], profile[name])),
            hallucinated=name in unrevealed,
        ))
    return marks


MARK_COLUMNS = ["field", "hidden", "plan", "revealed", "matched", "hallucinated"]
"""The profile-vs-plan table's columns (its headers before any episode is shown, too)."""
MARKS_TITLE = "Hidden profile vs. submitted plan (★ critical, ⚠ made up: the rubric judges it, no question revealed it)"
"""The table's title in Replays and Live play, its legend included."""


def marks_frame(marks: list[FieldMark]) -> "pd.DataFrame":
    """Field marks as a table with ✓/✗ columns (blank where a mark does not apply)."""
    import pandas as pd

    def tick(flag: bool) -> str:
        return "✓" if flag else "✗"

    rows = [{"field": ("★ " if m.critical else "") + shown(m.field), "hidden": shown(m.hidden or "—"),
             "plan": shown(m.planned or "—"), "revealed": tick(m.revealed),
             "matched": tick(m.matched) if m.hidden else "",
             "hallucinated": ("⚠ (empty, still judged)" if not m.planned else "⚠") if m.hallucinated else ""}
            for m in marks]
    return pd.DataFrame(rows, columns=MARK_COLUMNS)


def zero_reasons(episode: Episode) -> dict[str, str]:
    """Why each rubric component of an ended episode is 0, in words (component name -> reason).

    Derived from the record the way the rubric computes each part (``core.clarify.rubrics``), so
    a reader of a 0 bar learns what the agent did or missed, not only that it scored nothing.
    """
    b, sc, plan = episode.breakdown, episode.scenario, episode.plan
    if b is None:
        return {}
    missing = [k for k in sc.required_keys if not plan or plan.get(k) in (None, "", [], {})]
    why = {
        "FormatCheckRubric": "no plan parsed to a JSON object" if plan is None else
        f"the plan lacks a filled value for {', '.join(missing) or 'a demanded key'}",
        "FieldMatchRubric": "no plan" if plan is None else "no planned value matches the hidden profile",
        "InfoGainRubric": f"no question revealed a critical field ({', '.join(sc.critical_fields) or 'none'})",
        "QuestionEfficiencyRubric": f"all {sc.max_questions} questions of the budget were asked",
        "HallucinationCheckRubric": "every judged plan key was stated without a question revealing it (an empty "
                                    "value too: the rubric judges the key, not its value)",
    }
    reasons = {k: why.get(k, "the rubric gave 0") for k, v in b.components.items() if v == 0}
    if not b.gate_passed:
        reasons["score"] = "the format gate failed, so the score is forced to 0 and no component counts"
    return reasons


def _scenario_facts(episode: Episode) -> str:
    """Difficulty and fields revealed; a scenario rebuilt from a trace claims only what the trace says."""
    sc = episode.scenario
    rebuilt = sc.seed is None
    stated = not rebuilt or str(sc.source_id or "").endswith(sc.difficulty)
    difficulty = f"{inert(sc.difficulty)} ({inert(sc.title)})" if stated else "difficulty not in the trace"
    revealed = (f"{len(episode.fields_revealed)}/{len(sc.hidden_profile)} fields revealed" if sc.hidden_profile
                else f"{len(episode.fields_revealed)} fields revealed (hidden profile not in the trace)")
    source = " · scenario rebuilt from the trace's own tool results (its id names no generated scenario)" \
        if rebuilt and episode.recorded is not None else ""
    return f"{difficulty} · {episode.questions_asked}/{sc.max_questions} questions · {revealed}{source}"


def ending(episode: Episode, ended: str = "Episode ended: {}") -> str:
    """How the episode ended (``ended`` formats the reason); a log that shows no end says so."""
    if episode.termination != "running":
        return ended.format(episode.termination)
    return "not ended in the log" + (" (it holds no agent turn)" if not episode.turns else "")


def episode_header(episode: Episode, run: str) -> str:
    """A two-line markdown summary of one episode for the top of the episode view."""
    gate = "" if episode.breakdown is None else (
        " · gate ✓" if episode.breakdown.gate_passed else
        " · gate ✗ (score forced to 0)" if episode.score == 0 else " · gate ✗")
    recorded = "" if episode.recorded is None else (
        f" · recorded score ({inert(episode.recorded.source)}) **{episode.recorded.score:.3f}**")
    return (f"### {inert(episode.id)} · score **{episode.score:.3f}**{gate}{recorded}\n"
            f"{code(run)} · policy {code(episode.policy)} · rubric {episode.rubric} · "
            f"{inert(episode.scenario.family)} · {_scenario_facts(episode)} · "
            f"{ending(episode, 'ended by **{}**')} · ★ = critical field")
