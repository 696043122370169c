"""Episode logs on disk: one ``Episode`` JSON object per line (JSONL).

Reading validates every line against the schema and names the line of a bad record, so a
truncated or hand-edited log fails with a message a person can act on. ``strict=False`` keeps
the valid episodes and returns the problems beside them, for callers that asked for that.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Iterator

try:
    from orjson import loads as _fast_loads
except ImportError:  # orjson is optional: the standard library reads the same JSON, slower
    _fast_loads = json.loads

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from core.records import EPISODE_VERSION, Episode, field_problem


TOO_DEEP = "nested too deeply to be a record (hundreds of brackets inside each other)"
"""Python's json parser recurses once per bracket; a file of 100,000 ``[`` would end in a
RecursionError, so callers catch it and say this instead (an episode is a few levels deep)."""
ENCODING = "utf-8-sig"
"""UTF-8, with or without a byte-order mark (editors on Windows write one)."""


class EpisodeLogError(ValueError):
    """A log that cannot be read as episodes; the message names the file and line."""


@dataclass
class LogReport:
    """What a lenient read found: the good episodes and one message per bad line."""

    episodes: list[Episode] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was changed while reading (kept episodes, e.g. a repeated id renumbered)."""


def parse_line(text: str, where: str) -> Episode:
    """Parse one JSONL line into an Episode, or raise EpisodeLogError naming ``where``."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EpisodeLogError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise EpisodeLogError(f"{where}: {TOO_DEEP}") from None
    if not isinstance(obj, dict):
        raise EpisodeLogError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "version" not in obj:
        keys = ", ".join(list(obj)[:6]) or "none"
        raise EpisodeLogError(f"{where}: not an episode record (no 'version' field; its keys: {keys})")
    version = obj.get("version")
    if version != EPISODE_VERSION:
        raise EpisodeLogError(f"{where}: episode version {version!r} is not supported (expected {EPISODE_VERSION})")
    try:
        return Episode.model_validate(obj)
    except ValidationError as exc:
        raise EpisodeLogError(f"{where}: {field_problem(exc)}") from None


def iter_lines(stream: IO[str], name: str) -> Iterable[tuple[str, str]]:
    """Yield (location, text) for each non-blank line of a text stream."""
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield f"{name} line {number}", line


def _loads(text: str) -> object:
    try:
        return _fast_loads(text)
    except ValueError as exc:  # orjson.JSONDecodeError subclasses ValueError
        raise EpisodeLogError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise EpisodeLogError(TOO_DEEP) from None


def scan_records(path: str | Path) -> Iterator[tuple[str, str, dict]]:
    """Fast pass over a log for tables: yield (location, line, object) per non-blank line.

    Checks that each line is a JSON object of the supported version, not the full schema:
    ``parse_line`` validates a line when its episode is opened. Raises EpisodeLogError naming
    the line. Uses orjson when installed (about twice as fast as json here).
    """
    path = Path(path)
    try:
        with path.open(encoding=ENCODING) as stream:
            for where, text in iter_lines(stream, path.name):
                try:
                    obj = _loads(text)
                except EpisodeLogError as exc:
                    raise EpisodeLogError(f"{where}: {exc}") from None
                if not isinstance(obj, dict) or obj.get("version") != EPISODE_VERSION:
                    parse_line(text, where)  # raises the precise message
                yield where, text, obj
    except UnicodeDecodeError:
        raise EpisodeLogError(f"{path.name}: not a UTF-8 text file") from None


def read_episodes(path: str | Path, *, strict: bool = True) -> LogReport:
    """Read a JSONL episode log.

    Args:
        path: the ``.jsonl`` file.
        strict: raise on the first bad line (default); otherwise skip bad lines and report them.
    """
    path = Path(path)
    report = LogReport()
    try:
        with path.open(encoding=ENCODING) as stream:
            for where, text in iter_lines(stream, path.name):
                try:
                    report.episodes.append(parse_line(text, where))
                except EpisodeLogError as exc:
                    if strict:
                        raise
                    report.problems.append(str(exc))
    except UnicodeDecodeError:
        raise EpisodeLogError(f"{path.name}: not a UTF-8 text file") from None
    if not report.episodes and not report.problems:
        raise EpisodeLogError(f"{path.name}: the file holds no episodes")
    return report


def dump_episode(episode: Episode) -> str:
    """One episode as a single JSON line (no trailing newline).

    Agent text can hold lone UTF-16 surrogates (a model wrote ``"\\ud800"`` inside its JSON), which
    UTF-8 cannot encode; such an episode is written with ASCII escapes instead, which reads back
    to the same text.
    """
    try:
        return episode.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(episode.model_dump(mode="python"), ensure_ascii=True, default=str)


def write_episodes(path: str | Path, episodes: Iterable[Episode]) -> int:
    """Write episodes as JSONL, replacing the file; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as stream:
        for episode in episodes:
            stream.write(dump_episode(episode) + "\n")
            count += 1
    return count
