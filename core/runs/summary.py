"""Run summaries: what ``summary.json`` of an evaluation holds, computed from its episodes, and the run folder
written with it (``episodes.jsonl`` beside ``summary.json``).

Comparing two runs is ``core.runs.comparison`` (one implementation for the CLI and the app).

One ``RunSummary`` per run directory; every reader of runs (app, CLI, reports) reads it. Intervals are
95% percentile bootstraps from ``core.stats``, resampling whole scenarios when a scenario was
played more than once (K samples of one scenario are not independent).
"""

import math
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Sequence

from pydantic import BaseModel, BeforeValidator, ConfigDict

from core.clarify.families import DIFFICULTIES, FAMILIES
from core.clarify.toolcalls import ends_inside_call
from core.records import Episode
from core.runs.episode_log import write_episodes
from core.stats import bootstrap_mean

SUMMARY_VERSION = 1


class GroupStats(BaseModel):
    """Score statistics of one slice (a family, a difficulty)."""

    model_config = ConfigDict(extra="forbid")
    n: int
    mean: float
    max: float


class CutShare(BaseModel):
    """Agent turns that end inside a tool call (cut by the token budget mid-call), over a run."""

    model_config = ConfigDict(extra="forbid")
    turns: int
    """Agent turns in the run."""
    cut: int
    """Turns whose raw text ends inside a tool call (``core.clarify.toolcalls.ends_inside_call``)."""
    episodes: int
    """Episodes holding at least one cut turn."""
    share: float
    """cut / turns, in [0, 1]; 0 for a run without turns."""


def cut_share(episodes: Sequence[Episode]) -> CutShare:
    """How many of the episodes' turns end inside a tool call; a run without turns cuts none (0)."""
    cut = [[ends_inside_call(t.raw) for t in e.turns] for e in episodes]
    turns, n_cut = sum(len(c) for c in cut), sum(sum(c) for c in cut)
    return CutShare(turns=turns, cut=n_cut, episodes=sum(any(c) for c in cut), share=n_cut / turns if turns else 0.0)


class RunSummary(BaseModel):
    """``summary.json`` of one evaluation run."""

    model_config = ConfigDict(extra="forbid")
    version: int = SUMMARY_VERSION
    policy: str
    scenarios: str
    """The scenario-set spec the run used."""
    rubric: str
    """Rubric (and simulator) version, v1 or v2."""
    samples: int
    """Episodes per scenario (K)."""
    seed: int
    limit: int | None = None
    command: str = ""
    """The exact command line, when run from the CLI."""
    n: int
    """Episodes in the run."""
    n_scenarios: int
    avg_score: float
    avg_score_ci: list[Annotated[float, BeforeValidator(lambda v: math.nan if v is None else v)]]
    """[lo, hi] of the 95% bootstrap interval of avg_score (clustered by scenario when K > 1); NaN (null on disk)
    for a run of one scenario, which has no interval (``core.stats.MIN_UNITS``)."""
    completion_rate: float
    """Fraction of episodes whose plan passed the format gate."""
    format_pass_rate: float
    """Fraction of episodes that submitted a plan parsing to a JSON object (gate or not)."""
    avg_questions: float
    avg_steps: float
    per_family: dict[str, GroupStats]
    per_difficulty: dict[str, GroupStats]
    components: dict[str, float]
    """Mean of each rubric component over gated (gate-passed) episodes; empty when none passed."""
    terminations: dict[str, int]
    """Termination reason -> episode count."""
    cut: CutShare | None = None
    """Turns that end inside a tool call (None in a summary written before they were counted)."""


def _groups(episodes: Sequence[Episode], key, order: Sequence[str]) -> dict[str, GroupStats]:
    """Score stats per slice, slices in table order (then any unknown ones as met)."""
    scores = defaultdict(list)
    for e in episodes:
        scores[key(e)].append(e.score)
    names = [k for k in order if k in scores] + [k for k in scores if k not in order]
    return {k: GroupStats(n=len(scores[k]), mean=sum(scores[k]) / len(scores[k]), max=max(scores[k])) for k in names}


def summarize(episodes: Sequence[Episode], *, policy: str | None = None, scenarios: str = "", samples: int = 1,
              seed: int = 0, limit: int | None = None, command: str = "") -> RunSummary:
    """Summarise a run's episodes (all of one rubric version)."""
    if not episodes:
        raise ValueError("cannot summarise a run with no episodes")
    rubrics = {e.rubric for e in episodes}
    if len(rubrics) > 1:
        raise ValueError(f"episodes mix rubric versions {sorted(rubrics)}")
    n = len(episodes)
    scores = [e.score for e in episodes]
    ids = [e.scenario.id for e in episodes]
    ci = bootstrap_mean(scores, ids if len(set(ids)) < n else None)
    gated = [e for e in episodes if e.breakdown is not None and e.breakdown.gate_passed]
    components = {}
    if gated:
        for name in gated[0].breakdown.components:
            components[name] = sum(e.breakdown.components[name] for e in gated) / len(gated)
    terminations = defaultdict(int)
    for e in episodes:
        terminations[e.termination] += 1
    return RunSummary(
        policy=policy or episodes[0].policy, scenarios=scenarios, rubric=rubrics.pop(), samples=samples,
        seed=seed, limit=limit, command=command, n=n, n_scenarios=len(set(ids)),
        avg_score=ci.mean, avg_score_ci=[ci.lo, ci.hi], completion_rate=len(gated) / n,
        format_pass_rate=sum(e.plan is not None for e in episodes) / n,
        avg_questions=sum(e.questions_asked for e in episodes) / n,
        avg_steps=sum(len(e.turns) for e in episodes) / n,
        per_family=_groups(episodes, lambda e: e.scenario.family, list(FAMILIES)),
        per_difficulty=_groups(episodes, lambda e: e.scenario.difficulty, DIFFICULTIES),
        components=components, terminations=dict(terminations), cut=cut_share(episodes),
    )


def published_row(summary: RunSummary, label: str | None = None) -> dict:
    """The run as a row of the published scoreboard (runs_summary.json's flat keys)."""
    row = {"label": label or summary.policy, "model": summary.policy, "n": summary.n,
           "avg_score": summary.avg_score, "completion_rate": summary.completion_rate}
    for name, stats in summary.per_family.items():
        row[f"fam_{name}"] = stats.mean
        row[f"max_{name}"] = stats.max
    return row


def write_run(out: str | Path, episodes: Sequence[Episode], summary: RunSummary) -> None:
    """Write ``episodes.jsonl`` and ``summary.json`` into a run directory."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_episodes(out / "episodes.jsonl", episodes)
    (out / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
