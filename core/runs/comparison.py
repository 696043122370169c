"""The one paired comparison of two runs, used by ``python -m core.runs.eval compare`` and the Replays tab.

Two runs are paired by scenario (each scenario's samples averaged first) and differenced, a - b,
with a 95% bootstrap interval. Runs scored under different rubric versions are refused: their
scores measure different things (v2 corrects v1's simulator and scoring), so a difference between
them is not a difference between policies. Both entry points reach this module, so they cannot drift.
"""

import json
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from core.records import Episode
from core.stats import Interval, paired_difference


class RubricMismatch(ValueError):
    """Two runs (or the episodes of one run) scored under different rubric versions."""


@dataclass(frozen=True)
class Comparison:
    """Two runs on their shared scenarios: per-scenario scores and the paired difference."""

    a: str
    b: str
    rubric: str
    """The rubric version both runs were scored under ("?" when the tables do not say)."""
    table: pd.DataFrame
    """One row per shared scenario: scenario, family, difficulty, score_a, score_b, diff, and
    episode_a / episode_b (the first episode id of that scenario in each run)."""
    difference: Interval
    """Mean of score_a - score_b over shared scenarios, with its 95% bootstrap interval."""
    only_a: int
    only_b: int

    def within(self, column: str) -> dict[str, Interval]:
        """The paired difference inside each value of ``column`` ("family", "difficulty"), each with its
        own interval over that group's scenarios (from the table's 4-decimal scores)."""
        return {str(value): paired_difference(group["score_a"].to_numpy(), group["score_b"].to_numpy())
                for value, group in self.table.groupby(column, sort=True)}

    def record(self) -> dict:
        """The comparison as the CLI's JSON: names, counts, both means, the difference and its interval,
        and the same per family and per difficulty."""
        d = self.difference
        mean = (lambda col: float(self.table[col].mean()) if len(self.table) else float("nan"))
        return {"a": self.a, "b": self.b, "rubric": self.rubric, "n_shared": d.n, "only_a": self.only_a,
                "only_b": self.only_b, "mean_a": mean("score_a"), "mean_b": mean("score_b"),
                "diff": d.mean, "ci": [d.lo, d.hi],
                **{f"per_{column}": {k: v.as_dict() for k, v in self.within(column).items()}
                   for column in ("family", "difficulty")}}


def run_rubric(frame: pd.DataFrame, name: str) -> str:
    """The single rubric version of a run's table; raises RubricMismatch when it mixes versions."""
    if "rubric" not in frame.columns:
        return "?"
    versions = sorted({str(v) for v in frame["rubric"].dropna()})
    if len(versions) > 1:
        raise RubricMismatch(f"run {name} mixes rubric versions {versions}; compare runs of one version")
    return versions[0] if versions else "?"


FEW_SCENARIOS = 10
"""Below this many shared scenarios the note says a percentile bootstrap interval runs narrow (its coverage falls
short of 95% on few units)."""
SHOWN_COLUMNS = ["scenario", "family", "difficulty", "score_a", "score_b", "diff"]
"""The per-scenario table's columns a reader sees (``Comparison.table`` adds the two episode ids)."""
SHOWN_HEADERS = ["scenario", "family", "difficulty", "a: mean score", "b: mean score", "a − b"]
"""Their headers: a scenario's score is the mean over the run's samples of it (K of them)."""


def _per_scenario(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("scenario", observed=True, sort=False).agg(
        family=("family", "first"), difficulty=("difficulty", "first"), score=("score", "mean"),
        episode=("episode", "first"))


def compare_tables(a: pd.DataFrame, b: pd.DataFrame, *, name_a: str = "a", name_b: str = "b",
                   seed: int = 0) -> Comparison:
    """Pair two episode tables (``core.runs.episode_table``) by scenario and difference them.

    Raises:
        RubricMismatch: the runs were scored under different rubric versions (or one mixes them).
    """
    ra, rb = run_rubric(a, name_a), run_rubric(b, name_b)
    if "?" not in (ra, rb) and ra != rb:
        raise RubricMismatch(f"run {name_a} was scored under rubric {ra} and {name_b} under {rb}: "
                             "scores of different rubric versions are not comparable; pick two runs "
                             "of the same version")
    pa, pb = _per_scenario(a), _per_scenario(b)
    joined = pa.join(pb[["score", "episode"]], how="inner", lsuffix="_a", rsuffix="_b")
    table = pd.DataFrame({
        "scenario": joined.index.astype(str), "family": joined["family"].astype(str),
        "difficulty": joined["difficulty"].astype(str), "score_a": joined["score_a"].round(4),
        "score_b": joined["score_b"].round(4),
        "diff": (joined["score_a"] - joined["score_b"]).round(4),
        "episode_a": joined["episode_a"], "episode_b": joined["episode_b"]}).reset_index(drop=True)
    diff = paired_difference(joined["score_a"].to_numpy(), joined["score_b"].to_numpy(), seed=seed)
    return Comparison(a=name_a, b=name_b, rubric=ra if ra != "?" else rb, table=table, difference=diff,
                      only_a=len(pa) - len(table), only_b=len(pb) - len(table))


def episodes_frame(name: str, episodes: Sequence[Episode]) -> pd.DataFrame:
    """Validated episodes as an episode table (the rows the viewer builds from the raw log)."""
    from core.runs.episode_table import episode_table, record_row

    rows = [record_row(name, json.loads(e.model_dump_json())) for e in episodes]
    return episode_table(rows, [name])


def compare_episodes(a: Sequence[Episode], b: Sequence[Episode], *, name_a: str = "A",
                     name_b: str = "B") -> Comparison:
    """``compare_tables`` on two runs' episodes; refuses runs that share no scenario.

    Raises:
        ValueError: no shared scenario, or (RubricMismatch) different rubric versions.
    """
    comp = compare_tables(episodes_frame(name_a, a), episodes_frame(name_b, b), name_a=name_a, name_b=name_b)
    if comp.difference.n == 0:
        raise ValueError(f"runs {name_a} and {name_b} share no scenario ids")
    return comp


def largest_gap(comp: Comparison) -> str | None:
    """The shared scenario where the two runs differ most (the first one worth reading)."""
    if comp.table.empty:
        return None
    return str(comp.table.loc[comp.table["diff"].abs().idxmax(), "scenario"])


def comparison_note(comp: Comparison, run_a: str, run_b: str) -> str:
    """The paired difference in one sentence a reader can quote (run names as code spans)."""
    d = comp.difference
    if d.n == 0:
        return f"`{run_a}` and `{run_b}` share no scenario."
    only = f"Scenarios only in a: {comp.only_a}, only in b: {comp.only_b}."
    if math.isnan(d.lo):
        return (f"On **1** shared scenario (rubric {comp.rubric}), `{run_a}` − `{run_b}` = **{d.mean:+.3f}**: one "
                f"scenario has no interval, so no verdict. {only}")
    sign = "higher than" if d.lo > 0 else "lower than" if d.hi < 0 else "not distinguishable from"
    few = (f" With under {FEW_SCENARIOS} shared scenarios a percentile bootstrap interval runs too narrow: read the "
           "verdict as indicative." if d.n < FEW_SCENARIOS else "")
    return (f"On **{d.n}** shared scenarios (rubric {comp.rubric}), `{run_a}` − `{run_b}` = **{d.mean:+.3f}** "
            f"(95% paired bootstrap interval {d.lo:+.3f} to {d.hi:+.3f}): a is {sign} b.{few} {only}")
