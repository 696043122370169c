"""Plotly figures of runs and episodes: one builder per chart, tables in, figures out. The Replays tab
draws them all; Live play draws an ended episode's score with ``breakdown_bars`` and the ask-or-act
agent's beliefs with ``belief_figure`` (so they live here, not inside either tab's package).

Colours are fixed per task family and per rubric component across every chart, so a reader
learns them once; several runs in one chart differ by bar pattern, never by family colour. Every
text from data (run, family, scenario and component names, sources, reasons) goes through
``core.runs.transcripts.plot_text`` (here ``label``), in titles, ticks, legends, hover text and
annotations alike; hovertemplates take data only through ``meta``/``customdata``, never spliced in.
"""

import math
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.clarify.cued import posterior
from core.clarify.families import FAMILIES, FIELDS
from core.clarify.rubrics import field_weight
from core.records import Episode, Recorded, RewardBreakdown
from core.runs.transcripts import inert
from core.runs.transcripts import plot_text as label

FAMILY_COLORS = dict(zip(FAMILIES, ("#4C78A8", "#E45756", "#54A24B", "#F58518", "#B279A2")))
"""Family -> colour, in the families table's order (Tableau-like, colour-blind tolerant)."""
COMPONENT_COLORS = {"FormatCheck": "#9D9D9D", "FieldMatch": "#2F4B7C", "InfoGain": "#1B9E9E",
                    "QuestionEfficiency": "#C9A227", "HallucinationCheck": "#8C564B", "QuestionCost": "#B5523B"}
"""Component -> colour; deliberately none of the family colours, so no chart mixes the two."""
RUN_PATTERNS = ("", "/", "x", ".", "\\", "+")
"""Bar pattern per run, in the order runs are given."""
_LAYOUT = dict(template="plotly_white", margin=dict(l=50, r=20, t=50, b=110), height=440,
               legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0), font=dict(size=13),
               xaxis=dict(automargin=True), yaxis=dict(automargin=True))
"""The legend sits at the bottom of the figure's container, below the axis and its (automargined)
tick labels and title, so neither a rotated label nor the axis title runs into it."""


def short_component(name: str) -> str:
    """``FieldMatchRubric`` -> ``FieldMatch`` (the published suffix adds nothing on a chart)."""
    return name.removesuffix("Rubric")


def family_color(family: str) -> str:
    return FAMILY_COLORS.get(family, "#7F7F7F")


def _run_legend(fig: go.Figure, runs: Sequence[str]) -> None:
    """Legend entries for the run patterns (grey swatches), only when several runs share a chart."""
    if len(runs) < 2:
        return
    for i, run in enumerate(runs):
        fig.add_bar(x=[None], y=[None], name=label(run), legendgroup="runs", legendgrouptitle_text="run",
                    marker=dict(color="#BBBBBB", pattern=dict(shape=RUN_PATTERNS[i % len(RUN_PATTERNS)])))


def _empty(title: str, why: str) -> go.Figure:
    fig = go.Figure(layout=dict(title=title, **_LAYOUT))
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def interval_text(lo: float, hi: float) -> str:
    """A 95% interval as a hover reads it, or why there is none (one scenario: ``core.stats.MIN_UNITS``)."""
    return "(one scenario: no interval)" if math.isnan(lo) else f"[{lo:.3f}, {hi:.3f}]"


def sample_text(row) -> str:
    """What a mean is over: the episodes, and the scenarios its interval resamples."""
    return f"{row.n} episode{'s' * (row.n != 1)} over {row.scenarios} scenario{'s' * (row.scenarios != 1)}"


def family_bars(scores: pd.DataFrame) -> go.Figure:
    """Per-family mean (bars, with their 95% intervals) and max (ticks) score, one bar pattern per run.

    Args:
        scores: ``core.runs.episode_table.family_scores`` output (run, family, mean, lo, hi, max, n).
    """
    title = "Score per family: mean (bar) with its 95% interval, best episode (tick)"
    if scores.empty:
        return _empty(title, "no episodes selected")
    fig = go.Figure(layout=dict(title=title, barmode="group", **_LAYOUT))
    groups = list(scores.groupby("run", observed=True, sort=False))
    for i, (run, rows) in enumerate(groups):
        colors = [family_color(f) for f in rows["family"]]
        pattern = RUN_PATTERNS[i % len(RUN_PATTERNS)]
        fig.add_bar(x=[label(f) for f in rows["family"]], y=rows["mean"], name=label(run), offsetgroup=str(i), showlegend=False,
                    marker=dict(color=colors, pattern=dict(shape=pattern)),
                    error_y=dict(type="data", array=rows["hi"] - rows["mean"], arrayminus=rows["mean"] - rows["lo"],
                                 color="#444", thickness=1.5, width=4),
                    hovertext=[f"mean {r.mean:.3f} {interval_text(r.lo, r.hi)}<br>max {r.max:.3f}<br>{sample_text(r)}"
                               for r in rows.itertuples()], hovertemplate="%{x}<br>%{hovertext}")
        fig.add_scatter(x=[label(f) for f in rows["family"]], y=rows["max"], mode="markers", offsetgroup=str(i),
                        marker=dict(symbol="line-ew-open", size=22, color="#333", line=dict(width=3)),
                        showlegend=False, hoverinfo="skip")
    _run_legend(fig, [run for run, _ in groups])
    fig.update_layout(scattermode="group")
    fig.update_yaxes(range=[0, 1.05], title="score")
    return fig


def _histogram(frame: pd.DataFrame, column: str, title: str, xtitle: str, bins: dict,
               xrange: list[float]) -> go.Figure:
    if frame.empty:
        return _empty(title, "no episodes selected")
    runs = list(frame["run"].astype(str).unique())
    fig = go.Figure(layout=dict(title=title, barmode="stack", **_LAYOUT))
    listed: set[str] = set()  # each family gets one legend entry, from the first run that has it
    for i, run in enumerate(runs):
        rows = frame[frame["run"] == run]
        for family, fam_rows in rows.groupby("family", observed=True):
            fig.add_histogram(x=fam_rows[column], name=label(family), legendgroup=label(family), xbins=bins,
                              marker=dict(color=family_color(family),
                                          pattern=dict(shape=RUN_PATTERNS[i % len(RUN_PATTERNS)])),
                              showlegend=family not in listed, offsetgroup=str(i),
                              meta=[label(run), label(family)],
                              hovertemplate="%{meta[0]}<br>%{meta[1]}<br>%{x}: %{y} episodes<extra></extra>")
            listed.add(family)
    _run_legend(fig, runs)
    fig.update_xaxes(title=xtitle, range=xrange)
    fig.update_yaxes(title="episodes")
    return fig


def score_histogram(frame: pd.DataFrame) -> go.Figure:
    """Distribution of episode scores, stacked by family (one pattern per run)."""
    return _histogram(frame, "score", "Episode scores", "score",
                      dict(start=0.0, end=1.0001, size=0.05), [0, 1.0])


def questions_histogram(frame: pd.DataFrame) -> go.Figure:
    """How many questions episodes asked, stacked by family (one pattern per run)."""
    fig = _histogram(frame, "questions", "Questions asked per episode", "questions",
                     dict(start=-0.5, end=7.5, size=1), [-0.5, 6.5])
    fig.update_xaxes(dtick=1)
    return fig


def component_bars(means: pd.DataFrame, weights: dict[str, float] | None = None) -> go.Figure:
    """Mean of each rubric component with its 95% interval, one bar pattern per run.

    Args:
        means: ``core.runs.episode_table.component_means`` output (run, component, mean, lo, hi, n).
        weights: component -> weight, shown in the axis labels when given.
    """
    title = "Rubric components: mean over the selected episodes, ± 95% interval"
    if means.empty:
        return _empty(title, "no rubric breakdowns in the selection")
    weights = weights or {}
    fig = go.Figure(layout=dict(title=title, barmode="group", **_LAYOUT))
    groups = list(means.groupby("run", observed=True, sort=False))
    for i, (run, rows) in enumerate(groups):
        names = [short_component(c) for c in rows["component"]]
        labels = [f"{label(n)} ×{weights[c]:.2f}" if c in weights else f"{label(n)} (gate)"
                  for n, c in zip(names, rows["component"])]
        fig.add_bar(x=labels, y=rows["mean"], name=label(run), showlegend=False, meta=label(run),
                    marker=dict(color=[COMPONENT_COLORS.get(n, "#7F7F7F") for n in names],
                                pattern=dict(shape=RUN_PATTERNS[i % len(RUN_PATTERNS)])),
                    error_y=dict(type="data", array=rows["hi"] - rows["mean"], arrayminus=rows["mean"] - rows["lo"],
                                 color="#444", thickness=1.5, width=4),
                    hovertext=[f"mean {r.mean:.3f} {interval_text(r.lo, r.hi)}<br>{sample_text(r)}"
                               for r in rows.itertuples()], hovertemplate="%{x}<br>%{hovertext}<extra>%{meta}</extra>")
    _run_legend(fig, [run for run, _ in groups])
    fig.update_yaxes(range=[0, 1.05], title="mean value")
    return fig


def breakdown_bars(breakdown: RewardBreakdown | None,
                   missing: str = "this episode has no breakdown (still running)",
                   recorded: Recorded | None = None, reasons: dict[str, str] | None = None) -> go.Figure:
    """One episode's rubric: each component's value and its weighted share of the score.

    With ``recorded`` (an imported log's own scores), its component values are drawn as black
    diamonds over our bars, so a re-scored episode shows both verdicts.
    """
    if breakdown is None:
        return _empty("Rubric breakdown", missing)
    gate = "passed" if breakdown.gate_passed else "FAILED: score is 0"
    title = f"Score {breakdown.total:.3f} (rubric {breakdown.rubric}) · format gate {gate}"
    names = list(breakdown.weights) or list(breakdown.components)
    labels = [f"{label(short_component(n))}<br>×{breakdown.weights.get(n, 0):.2f}" for n in names]
    values = [breakdown.components.get(n, 0.0) for n in names]
    shares = [v * breakdown.weights.get(n, 0.0) * breakdown.gate_passed for n, v in zip(names, values)]
    colors = [COMPONENT_COLORS.get(short_component(n), "#7F7F7F") for n in names]
    fig = go.Figure(layout=dict(title=dict(text=title, subtitle=dict(
        text="pale bar: component value · solid bar: weight × value, its share of the score")),
        barmode="overlay", showlegend=False, **{**_LAYOUT, "height": 360, "margin": dict(l=50, r=20, t=70, b=40)}))
    fig.add_bar(x=labels, y=values, name="component value", marker=dict(color=colors, opacity=0.35),
                text=[f"{v:.2f}" for v in values], textposition="outside",
                hovertemplate="%{x}<br>value %{y:.3f}<extra></extra>")
    fig.add_bar(x=labels, y=shares, name="weight × value (adds to the score)",
                marker=dict(color=colors), width=0.4,
                hovertemplate="%{x}<br>contributes %{y:.3f}<extra></extra>")
    if recorded is not None and recorded.breakdown:
        fig.add_scatter(x=labels, y=[recorded.breakdown.get(n) for n in names], mode="markers",
                        name=f"recorded by {label(recorded.source)}", marker=dict(symbol="diamond", size=11, color="#111"),
                        hovertemplate="%{x}<br>recorded %{y:.3f}<extra></extra>")
        fig.update_layout(title_subtitle_text=f"bars: ours · ◆ recorded by {label(recorded.source)} "
                                              f"(score {recorded.score:.3f}) · solid: weight × value")
    low = min(0.0, *shares)  # a cost (v3's questions) takes its share below zero
    fig.update_yaxes(range=[low - 0.15 if low < 0 else 0, 1.15], title="value", zeroline=True,
                     zerolinecolor="#444")
    _why_zero(fig, reasons or {})
    return fig


def _why_zero(fig: go.Figure, reasons: dict[str, str]) -> None:
    """A line under the chart per component at 0 (and for a failed gate) saying why."""
    if not reasons:
        return
    lines = [f"<b>{label(short_component(k)) if k != 'score' else 'score'} = 0</b>: {label(v)}" for k, v in reasons.items()]
    fig.add_annotation(text="<br>".join(lines), showarrow=False, x=0, xref="paper", xanchor="left",
                       y=-0.22, yref="paper", yanchor="top", align="left", font=dict(size=12, color="#444"))
    fig.update_layout(height=360 + 18 * len(lines) + 20,
                      margin=dict(l=50, r=20, t=70, b=60 + 18 * len(lines)))


def difference_bars(table: pd.DataFrame, run_a: str, run_b: str, empty: str = "the two runs share no scenario"
                    ) -> go.Figure:
    """Per-scenario score difference (a - b), coloured by family, sorted; ``empty`` says why there is none."""
    title = f"Score difference per shared scenario: {label(run_a)} − {label(run_b)}"
    if table.empty:
        return _empty(title, empty)
    rows = table.sort_values("diff", kind="stable")
    fig = go.Figure(layout=dict(title=title, barmode="relative", **_LAYOUT))
    for family in rows["family"].unique():  # one trace a family, so the legend names each colour
        mine = rows[rows["family"] == family]
        fig.add_bar(x=[label(s) for s in mine["scenario"]], y=mine["diff"], name=label(family),
                    marker=dict(color=family_color(family)),
                    hovertemplate="%{x}<br>difference %{y:+.3f}<extra></extra>")
    fig.update_xaxes(showticklabels=len(rows) <= 30, title="scenario (sorted by difference)",
                     categoryorder="array", categoryarray=[label(s) for s in rows["scenario"]])
    fig.update_yaxes(range=[-1.05, 1.05], title="score a − score b")
    return fig


def family_legend(families: Sequence[str] = tuple(FAMILIES)) -> str:
    """HTML swatches naming each family's colour (one line above the charts)."""
    chips = [f'<span style="color:{family_color(f)}">■</span> {f}' for f in families]
    return " &nbsp; ".join(chips)


# ---- a decision-driven agent's beliefs (v3 episodes) ----------------------------------------

SERIES_COLORS = {"true posterior": "#9D9D9D", "model, from the request": "#2F4B7C", "model, after the answer": "#1B9E9E"}


def _asked_turns(episode: Episode) -> dict[str, int]:
    return {step.asked: step.turn for step in episode.beliefs.steps if step.asked}


def beliefs_note(episode: Episode) -> str:
    """One line per field: the gain the agent saw at the start against the cost, and what it did."""
    b = episode.beliefs
    start, asked = b.steps[0], _asked_turns(episode)
    lines = [f"Beliefs of **{inert(b.model)}**; a question costs {b.cost:.2f}."]
    for field in episode.scenario.required_keys:
        gain = start.gains.get(field, 0.0)
        did = f"asked at turn {asked[field]}" if field in asked else \
            ("not asked yet" if episode.termination == "running" else "not asked")
        lines.append(f"- {inert(field)}: expected gain {gain:.3f} "
                     f"{'>' if gain > b.cost else '≤'} cost → {did}")
    return "\n".join(lines)


def belief_figure(episode: Episode) -> go.Figure:
    """One panel per required field: true posterior, the model's belief, and its belief after an answer."""
    fields = list(episode.scenario.required_keys)
    fig = make_subplots(rows=1, cols=len(fields), subplot_titles=[label(f) for f in fields])
    start, last, asked = episode.beliefs.steps[0], episode.beliefs.steps[-1], _asked_turns(episode)
    shown: set[str] = set()  # one legend entry per series
    for col, field in enumerate(fields, 1):
        values = [label(v) for v in FIELDS[field].values]
        series = {"true posterior": posterior(episode.scenario, field), "model, from the request": start.fields[field]}
        if field in asked:
            series["model, after the answer"] = last.fields[field]
        for name, probs in series.items():
            fig.add_bar(x=values, y=probs, name=name, marker_color=SERIES_COLORS[name], legendgroup=name,
                        showlegend=name not in shown, row=1, col=col)
            shown.add(name)
    weights = ", ".join(f"{field_weight(episode.scenario, f):.2f}" for f in fields)
    fig.update_layout(template="plotly_white", barmode="group", height=380, margin=dict(l=40, r=20, t=60, b=90),
                      title=f"Belief per field (FieldMatch weights {weights})",
                      legend=dict(orientation="h", y=-0.35), font=dict(size=12))
    fig.update_yaxes(range=[0, 1])
    return fig
