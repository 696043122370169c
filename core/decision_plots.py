"""Plotly figures of the Decisions tab: answer bars, reliability diagram, selective curve, probe bars.

Pure functions from answers or metric records to ``go.Figure``; nothing here computes a metric
(those come from ``core.calibration``). Two models share one figure, told apart by colour, so a
comparison is always on the same axes.
"""

from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.decision_views import CLOSE_MARGIN, reading

COLORS = ("#2563eb", "#ea580c")
"""Model A, model B."""
PALE = ("#bfdbfe", "#fed7aa")
"""The same hues for options that were not chosen."""
FONT = dict(family="system-ui, sans-serif", size=13)


def _title(qid: str, text: str, answers: Sequence[Mapping]) -> str:
    short = text if len(text) <= 70 else text[:67] + "..."
    badge = " ⚠ close call" if any(reading(qid, a).close for a in answers) else ""
    return f"<b>{qid}</b> · {short}{badge}"


def answer_figure(questions: Mapping[str, str], results: Mapping[str, Mapping[str, Mapping]]) -> go.Figure:
    """One horizontal bar panel per question: every option's probability, the chosen one starred.

    Args:
        questions: qid -> question text, in display order.
        results: model name -> {qid: typed answer} (one or two models).
    """
    qids = [q for q in questions if all(q in r for r in results.values())]
    if not qids:
        return empty_figure("No answers yet: fill a state and a question, then press Ask.")
    sizes = [len(next(iter(results.values()))[q]["probabilities"]) for q in qids]
    titles = [_title(q, questions[q], [r[q] for r in results.values()]) for q in qids]
    fig = make_subplots(rows=len(qids), cols=1, subplot_titles=titles, row_heights=sizes,
                        vertical_spacing=min(0.12, 0.35 / max(1, len(qids))))
    for m, (name, answers) in enumerate(results.items()):
        for row, qid in enumerate(qids, 1):
            ans = answers[qid]
            keys, probs = list(ans["probabilities"]), list(ans["probabilities"].values())
            chosen = [k == ans["choice"] for k in keys]
            fig.add_bar(
                x=probs, y=keys, orientation="h", name=name, legendgroup=name, showlegend=row == 1,
                marker_color=[COLORS[m] if c else PALE[m] for c in chosen],
                marker_line=dict(color=COLORS[m], width=1.5),
                text=[f"{'★ ' if c else ''}{p:.0%}" for p, c in zip(probs, chosen)], textposition="outside",
                cliponaxis=False, hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>", row=row, col=1,
            )
    fig.update_xaxes(range=[0, 1.12], tickformat=".0%", gridcolor="#e5e7eb")
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(barmode="group", height=110 + 34 * sum(sizes) * max(1, len(results)) + 60 * len(qids),
                      margin=dict(l=10, r=30, t=50, b=30), plot_bgcolor="white", font=FONT,
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"),
                      bargap=0.25)
    fig.update_annotations(font_size=13, x=0, xanchor="left")
    return fig


def empty_figure(message: str) -> go.Figure:
    """A blank figure carrying one line of text (so a plot slot is never an error)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14, color="#6b7280"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=180, plot_bgcolor="white", margin=dict(l=10, r=10, t=10, b=10))
    return fig


__all__ = ["CLOSE_MARGIN", "answer_figure", "empty_figure"]
