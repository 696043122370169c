"""Import episode logs: our JSONL format, or the published ClarifyRL curated-trace files.

A published trace file is a JSON list of objects (model_label, scenario_id, family, request,
final_score, questions_asked, score_breakdown, messages). Its scores are kept as recorded in
``Episode.recorded``. When ``scenario_id`` reads ``seed{seed}_{family}_{difficulty}`` we rebuild the
scenario, replay the agent's calls through our environment under rubric v1 and keep our own score
beside the recorded one; otherwise the episode is rebuilt from the trace alone.

Run: ``python -m core.runs.importer convert IN OUT.jsonl [--keep-valid]``.
"""

import argparse
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from core.clarify.environment import ClarifyEnv
from core.runs.episode_log import ENCODING, TOO_DEEP, EpisodeLogError, LogReport, read_episodes, write_episodes
from core.clarify.families import FAMILIES, MAX_STEPS, RUBRIC_WEIGHTS, TITLES
from core.records import Count, Episode, Recorded, RewardBreakdown, Scenario, Unit, Value, field_problem, plain_problem
from core.clarify.scenarios import generate_scenario
from core.clarify.toolcalls import parse_tool_call

MAX_BYTES = 50 * 1024 * 1024
"""Largest log we read (a 10,000-episode log of our own is about 30 MB)."""
Format = Literal["episodes", "published-trace"]
SOURCE = "published-trace"
_SCENARIO_ID = re.compile(r"^seed(\d{1,18})_([a-z_]+)_(easy|medium|hard)$")
"""A generated scenario's id; a longer seed names none (and Python refuses to read 4,301 digits)."""
_TRACE_KEYS = ("scenario_id", "family", "messages", "final_score")


class _TraceRecord(BaseModel):
    """The fields of a published trace record that the import reads (its other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")  # a foreign format: keys we do not read are not errors

    scenario_id: str
    family: str
    messages: list[Any]
    """Chat turns; entries that are not ``{"role", "content"}`` objects are skipped."""
    final_score: Unit
    score_breakdown: dict[str, Unit] | None = None
    questions_asked: Count | None = None
    model_label: str | None = None
    request: str | None = None


class _TraceResult(BaseModel):
    """The fields of a tool result that rebuild a scenario from a trace (its other keys are kept as they are)."""

    model_config = ConfigDict(extra="ignore")

    field_revealed: str | None = None
    hidden_profile: dict[str, Value] | None = None
    critical_fields: list[str] | None = None
    required_keys: list[str] | None = None


def check_file(path: Path) -> None:
    """Refuse empty, oversized and binary files with a message naming the problem."""
    size = path.stat().st_size
    if size == 0:
        raise EpisodeLogError(f"{path.name}: the file is empty")
    if size > MAX_BYTES:
        raise EpisodeLogError(f"{path.name}: the file is {size / 2**20:.1f} MB; logs are limited to "
                              f"{MAX_BYTES // 2**20} MB (split it into several files)")
    with path.open("rb") as stream:
        head = stream.read(65536)
    if b"\x00" in head:
        raise EpisodeLogError(f"{path.name}: this is a binary file, not a JSON or JSONL text log")


def detect_format(path: Path) -> Format:
    """``published-trace`` for a JSON list, ``episodes`` for JSONL objects; else a clear error."""
    with path.open(encoding="utf-8", errors="replace") as stream:
        head = stream.read(4096).lstrip("\ufeff \t\r\n")
    if not head:
        raise EpisodeLogError(f"{path.name}: the file holds no episodes (only blank lines)")
    if head.startswith("["):
        return "published-trace"
    if head.startswith("{"):
        return "episodes"
    raise EpisodeLogError(f"{path.name}: neither a JSONL episode log (one {{...}} per line) nor a "
                          f"published trace file (a JSON list); it starts with {head[:30]!r}")


def read_log(path: str | Path, *, keep_valid: bool = False) -> tuple[Format, LogReport]:
    """Read any supported log; ``keep_valid`` skips bad records and reports them instead of failing."""
    path = Path(path)
    check_file(path)
    fmt = detect_format(path)
    if fmt == "episodes":
        return fmt, renumber_repeats(read_episodes(path, strict=not keep_valid))
    try:
        items = json.loads(path.read_text(encoding=ENCODING))
    except RecursionError:
        raise EpisodeLogError(f"{path.name}: {TOO_DEEP}") from None
    except UnicodeDecodeError:
        raise EpisodeLogError(f"{path.name}: not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise EpisodeLogError(f"{path.name} line {exc.lineno}: not valid JSON ({exc.msg} at column "
                              f"{exc.colno})") from None
    return fmt, convert_traces(items, path.name, keep_valid=keep_valid)


def convert_traces(items: Any, name: str, *, keep_valid: bool = False) -> LogReport:
    """Convert a parsed published trace list; bad records raise, or are reported when ``keep_valid``."""
    if not isinstance(items, list):
        raise EpisodeLogError(f"{name}: a published trace file holds a JSON list, got {type(items).__name__}")
    report = LogReport()
    for i, item in enumerate(items):
        try:
            report.episodes.append(convert_trace(item))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            message = f"{name} record {i}: {_problem(exc)}"
            if not keep_valid:
                raise EpisodeLogError(message) from None
            report.problems.append(message)
    if not report.episodes and not report.problems:
        raise EpisodeLogError(f"{name}: the file holds no episodes")
    return renumber_repeats(report, note=False)  # a trace has no sample index: repeats are its samples


def _problem(exc: Exception) -> str:
    """Why a trace record could not be read, in words (never a pydantic dump or a recursion trace)."""
    return TOO_DEEP if isinstance(exc, RecursionError) else plain_problem(exc)


def renumber_repeats(report: LogReport, note: bool = True) -> LogReport:
    """Give each repeated episode id the scenario's next free sample index, so every id opens its
    own episode; ``note`` says so in ``report.notes`` (one line, with the first renumbered id)."""
    taken = {episode.id for episode in report.episodes}
    seen: set[str] = set()
    renamed: list[str] = []
    for i, episode in enumerate(report.episodes):
        if episode.id in seen:
            sample = 0
            while f"{episode.scenario.id}#{sample}" in taken:
                sample += 1
            renamed.append(f"{episode.id} → {episode.scenario.id}#{sample}")
            episode = report.episodes[i] = episode.model_copy(update={"sample": sample})
            taken.add(episode.id)
        seen.add(episode.id)
    if renamed and note:
        report.notes.append(f"{len(renamed)} repeated episode id(s) renumbered so each opens its own episode "
                            f"(first: {renamed[0]})")
    return report


def _content_text(content: Any) -> str:
    """A chat message's content as text (plain strings, or lists of ``{"type": "text"}`` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_content_text(p.get("text")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content)


def _tool_result(text: str) -> dict:
    """A tool result message: a JSON object, then a reminder line we drop."""
    try:
        obj, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except (json.JSONDecodeError, RecursionError):
        return {"text": text}
    return obj if isinstance(obj, dict) else {"value": obj}


def agent_steps(messages: list) -> list[tuple[str, Any, str | None, dict]]:
    """(raw text, parsed call or None, parse error, recorded result) per assistant message."""
    steps = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        raw = _content_text(msg.get("content"))
        call, error = parse_tool_call(raw)
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = isinstance(nxt, dict) and nxt.get("role") in ("user", "tool")
        result = _tool_result(_content_text(nxt.get("content"))) if answered else {}
        steps.append((raw, call, error, result))
    return steps


def identify(scenario_id: str, family: str) -> Scenario | None:
    """The generated scenario behind a published id, or None when the id does not name one."""
    match = _SCENARIO_ID.match(scenario_id)
    if not match or match.group(2) != family or family not in FAMILIES:
        return None
    scenario = generate_scenario(int(match.group(1)), match.group(3))
    return scenario if scenario.family == family else None


def convert_trace(item: Any) -> Episode:
    """One published trace record -> an Episode (re-scored with v1 when the scenario is known)."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a trace object, got {type(item).__name__}")
    missing = [k for k in _TRACE_KEYS if k not in item]
    if missing:
        raise ValueError(f"not a published trace record: missing {', '.join(missing)}")
    record = _TraceRecord.model_validate(item)  # a ValidationError names the bad field
    label = record.model_label or "unknown"
    recorded = Recorded(source=SOURCE, score=record.final_score, label=label,
                        breakdown=record.score_breakdown or {})
    steps = agent_steps(record.messages)
    scenario = identify(record.scenario_id, record.family)
    if scenario is None:
        episode = _recorded_only(record, steps, recorded)
    else:
        env = ClarifyEnv(scenario, "v1")
        for raw, call, error, _ in steps:
            if env.done:
                break
            env.step(call, raw=raw, parse_error=error)
        episode = env.episode(policy=f"published:{label}")
    episode = Episode.model_validate({**episode.model_dump(mode="json"), "recorded": recorded.model_dump()})
    return episode


def _checked_result(index: int, result: dict) -> _TraceResult:
    """The scenario fields of turn ``index``'s tool result, or a ValueError naming the bad one."""
    try:
        return _TraceResult.model_validate(result)
    except ValidationError as exc:
        raise ValueError(f"the tool result of turn {index}: {field_problem(exc)}") from None


def _recorded_only(record: _TraceRecord, steps: list, recorded: Recorded) -> Episode:
    """An episode rebuilt from the trace's own tool results (no scenario to replay against)."""
    family = record.family
    match = re.search(r"(easy|medium|hard)$", record.scenario_id)
    difficulty = match.group(1) if match else "medium"
    results = [_checked_result(i, r) for i, (_, _, _, r) in enumerate(steps)]
    plans = [(r, checked) for (_, c, _, r), checked in zip(steps, results) if c and c.name == "propose_plan"]
    final, known = plans[-1] if plans else ({}, _TraceResult())
    profile = known.hidden_profile or {}
    required = known.required_keys or list(FAMILIES[family].required if family in FAMILIES else [])
    scenario = Scenario(seed=None, source_id=record.scenario_id, family=family, difficulty=difficulty,
                        title=TITLES[difficulty], request=record.request or "", hidden_profile=profile,
                        critical_fields=sorted(known.critical_fields or []),
                        required_keys=required, field_keys=sorted(profile),
                        max_steps=MAX_STEPS[difficulty])
    # dicts, not Turns: the episode's validation names a bad result as ``turns.N.result``
    turns = [dict(index=i, raw=raw, call=call, parse_error=err, result=res)
             for i, (raw, call, err, res) in enumerate(steps)]
    revealed = [checked.field_revealed for checked in results if checked.field_revealed]
    last = steps[-1][1] if steps else None
    # A plan call ends an episode whatever its result holds; only without one did it run out of steps.
    # A trace without a single agent turn does not say how it ended: "running", never a made-up end.
    termination = "plan" if plans else "running" if not steps else "unparseable" if last is None else "max_steps"
    # A failed gate forces the score to 0, so a positive recorded score means the gate passed
    # (the recorded FormatCheck of a published trace may be stale, or missing); no turns, no plan, no pass.
    gate = bool(steps) and (recorded.score > 0 or recorded.breakdown.get("FormatCheckRubric", 0.0) >= 0.5)
    weights = {f"{k}Rubric": w for k, w in RUBRIC_WEIGHTS.items()}
    breakdown = RewardBreakdown(rubric="v1", total=recorded.score, gate_passed=gate,
                                components=recorded.breakdown, weights=weights)
    plan = final.get("plan") if isinstance(final.get("plan"), dict) else None
    return Episode(scenario=scenario, policy=f"published:{recorded.label}", rubric="v1", turns=turns,
                   plan=plan, score=recorded.score, breakdown=breakdown, termination=termination,
                   questions_asked=record.questions_asked or 0, fields_revealed=revealed)


def convert(src: str | Path, dst: str | Path, *, keep_valid: bool = False) -> tuple[Format, LogReport]:
    """Read any supported log and write it as our JSONL; returns the detected format and report."""
    fmt, report = read_log(src, keep_valid=keep_valid)
    write_episodes(dst, report.episodes)
    return fmt, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.runs.importer", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert a published trace file or our JSONL into our JSONL")
    conv.add_argument("src")
    conv.add_argument("dst")
    conv.add_argument("--keep-valid", action="store_true", help="skip bad records instead of failing")
    args = parser.parse_args(argv)
    try:
        fmt, report = convert(args.src, args.dst, keep_valid=args.keep_valid)
    except (EpisodeLogError, OSError) as exc:
        print(f"error: {exc}")
        return 1
    for problem in report.problems:
        print(f"skipped: {problem}")
    eps = report.episodes
    rescored = [e for e in eps if e.recorded is not None and e.scenario.seed is not None]
    print(f"read {len(eps)} episodes ({fmt}); {len(rescored)} re-scored with rubric v1; wrote {args.dst}")
    if rescored:
        mine = sum(e.score for e in rescored) / len(rescored)
        theirs = sum(e.recorded.score for e in rescored) / len(rescored)
        print(f"mean score on re-scored episodes: recorded {theirs:.4f}, ours (v1) {mine:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
