"""Plotly figures of the Decisions tab: answer bars, reliability diagram, selective curve, probe bars.

Pure functions from answers or metric records to ``go.Figure``; nothing here computes a metric
(those come from ``core.calibration``). Two models share one figure, told apart by colour, so a
comparison is always on the same axes. Every text from data (model names, question ids and text,
option keys and criteria) goes through ``core.runs.transcripts.plot_text``, the Replays charts' own.
"""

from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.decision.system_one import probabilities_of, top_option
from core.runs.transcripts import plot_text
from demo.decisions.builder import CLOSE_MARGIN, reading

COLORS = ("#2563eb", "#ea580c")
"""Model A, model B."""
PALE = ("#bfdbfe", "#fed7aa")
"""The same hues for options that were not chosen."""
GAP_PATTERNS = ("/", "\\")
"""Each model's gap to confidence, hatched in its own colour and direction: two models' swatches differ."""
FONT = dict(family="system-ui, sans-serif", size=13)
KNOWN = "#111827"
"""The known answer's tick: dark, apart from both models' colours."""


def _title(qid: str, text: str, answers: Sequence[Mapping]) -> str:
    short = text if len(text) <= 70 else text[:67] + "..."
    badge = " ⚠ close call" if any(reading(qid, a).close for a in answers) else ""
    return f"<b>{plot_text(qid)}</b> · {plot_text(short)}{badge}"


def option_label(ans: Mapping, key: str) -> str:
    """An option as the reader knows it: its key, a score level with its criterion (System One keys
    levels "0".."K-1" and names them in the answer's legend)."""
    named = option_name(ans, key)
    return f"{key}: {named}" if named != key else key


def option_name(ans: Mapping, key: str) -> str:
    """An option as its question wrote it: a score level's criterion (keyed "0".."K-1"), else its key."""
    return (ans.get("legend") or {}).get(key) or key


def answer_figure(questions: Mapping[str, str], results: Mapping[str, Mapping[str, Mapping]],
                  known: Mapping[str, Mapping[str, float]] | None = None) -> go.Figure:
    """One horizontal bar panel per question: every option's probability, the chosen one starred, and a dark tick
    at each option's known probability where the question has one.

    Args:
        questions: qid -> question text, in display order.
        results: model name -> {qid: System One answer} (one or two models).
        known: qid -> option -> known probability (an example's own questions; ``examples.known_answers``).
    """
    qids = [q for q in questions if results and all(q in r for r in results.values())]
    if not qids:
        return empty_figure("No answers yet: fill a state and a question, then press Ask.")
    first = next(iter(results.values()))  # every model answers the same options: the first one's lay out the rows
    sizes = [len(probabilities_of(first[q])) for q in qids]
    titles = [_title(q, questions[q], [r[q] for r in results.values()]) for q in qids]
    fig = make_subplots(rows=len(qids), cols=1, subplot_titles=titles, row_heights=sizes,
                        vertical_spacing=min(0.12, 0.35 / max(1, len(qids))))
    for m, (name, answers) in enumerate(results.items()):
        for row, qid in enumerate(qids, 1):
            ans = answers[qid]
            by_option = probabilities_of(ans)
            keys, probs = [option_label(ans, k) for k in by_option], list(by_option.values())
            chosen = [k == top_option(ans) for k in by_option]
            fig.add_bar(
                x=probs, y=[plot_text(k) for k in keys], orientation="h", name=plot_text(name), legendgroup=plot_text(name),
                showlegend=row == 1, meta=plot_text(name),
                marker_color=[COLORS[m] if c else PALE[m] for c in chosen],
                marker_line=dict(color=COLORS[m], width=1.5),
                text=[f"{'★ ' if c else ''}{p:.0%}" for p, c in zip(probs, chosen)], textposition="outside",
                cliponaxis=False, hovertemplate="%{y}: %{x:.3f}<extra>%{meta}</extra>", row=row, col=1,
            )
    marked = [(row, qid) for row, qid in enumerate(qids, 1) if (known or {}).get(qid)]
    for n, (row, qid) in enumerate(marked):
        options = probabilities_of(first[qid])  # known answers name options as the question wrote them
        fig.add_scatter(x=[known[qid].get(option_name(first[qid], k), 0.0) for k in options],
                        y=[plot_text(option_label(first[qid], k)) for k in options],
                        mode="markers", marker=dict(symbol="line-ns-open", size=22, color=KNOWN, line=dict(width=3)),
                        name="known answer", legendgroup="known", showlegend=n == 0,
                        hovertemplate="%{y}: known %{x:.2f}<extra></extra>", row=row, col=1)
    fig.update_xaxes(range=[0, 1.12], tickformat=".0%", gridcolor="#e5e7eb")
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(barmode="group", height=110 + 34 * sum(sizes) * max(1, len(results)) + 60 * len(qids),
                      margin=dict(l=10, r=30, t=80, b=30), plot_bgcolor="white", font=FONT,
                      # in the top margin, right of the plot label and above the first question's title (long model
                      # names overlapped that title)
                      legend=dict(orientation="h", yref="container", y=1, yanchor="top", x=1, xanchor="right"),
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


def _finite(x: float) -> bool:
    return x == x  # NaN is the only value unequal to itself


def reliability_figure(reports: Sequence) -> go.Figure:
    """Accuracy per confidence bin with Wilson intervals, the gap to the diagonal, and per-bin counts.

    ``reports`` are ``core.decision.evaluation.reports.ModelReport``s (one or two), drawn as grouped bars.
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.06)
    k = max(1, len(reports))
    for m, rep in enumerate(reports):
        bins = rep.bins
        width = (bins[0].hi - bins[0].lo) * 0.9 / k
        x = [(b.lo + b.hi) / 2 + (m - (k - 1) / 2) * width for b in bins]  # side by side within a bin
        full = [b for b in bins if b.count]
        xs = [xi for xi, b in zip(x, bins) if b.count]
        c, pale = COLORS[m % 2], PALE[m % 2]
        fig.add_bar(x=xs, y=[b.accuracy for b in full], width=width, name=f"{plot_text(rep.name)}: accuracy", marker_color=c,
                    legendgroup=plot_text(rep.name), error_y=dict(type="data", symmetric=False, color="#111827", thickness=1,
                                                      array=[b.acc_hi - b.accuracy for b in full],
                                                      arrayminus=[b.accuracy - b.acc_lo for b in full]),
                    customdata=[[b.count, b.confidence, b.acc_lo, b.acc_hi] for b in full],
                    hovertemplate="accuracy %{y:.3f} [%{customdata[2]:.3f}, %{customdata[3]:.3f}]<br>"
                                  "mean confidence %{customdata[1]:.3f}<br>%{customdata[0]} rows<extra></extra>",
                    row=1, col=1)
        fig.add_bar(x=xs, y=[b.confidence - b.accuracy for b in full], base=[b.accuracy for b in full], width=width,
                    name=f"{plot_text(rep.name)}: gap to confidence", marker=dict(color="rgba(255,255,255,0.55)",
                    line=dict(color=c, width=1), pattern=dict(shape=GAP_PATTERNS[m % 2], fgcolor=c, size=5)),
                    legendgroup=plot_text(rep.name), hoverinfo="skip", row=1, col=1)
        fig.add_bar(x=x, y=[b.count for b in bins], width=width, marker_color=pale, marker_line_color=c,
                    marker_line_width=1, name=f"{plot_text(rep.name)}: rows", legendgroup=plot_text(rep.name), showlegend=False,
                    hovertemplate="%{y} rows<extra></extra>", row=2, col=1)
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#6b7280", dash="dash"),
                    name="perfect calibration", row=1, col=1)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", gridcolor="#e5e7eb")
    fig.update_xaxes(title_text="confidence (top probability), 15 bins", row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], title_text="accuracy", gridcolor="#e5e7eb", row=1, col=1)
    fig.update_yaxes(title_text="rows", gridcolor="#e5e7eb", rangemode="tozero", row=2, col=1)
    fig.update_layout(barmode="overlay", height=560, plot_bgcolor="white", font=FONT,
                      title=dict(text="Reliability: accuracy vs confidence (bars ± 95% Wilson)", x=0, font_size=15),
                      margin=dict(l=10, r=10, t=60, b=40), legend=dict(orientation="h", y=-0.18))
    return fig


def selective_figure(reports: Sequence) -> go.Figure:
    """Risk (error rate among answered rows) vs coverage, answering the most confident rows first."""
    fig = go.Figure()
    for m, rep in enumerate(reports):
        aurc = rep.metrics["aurc"]
        width = f" [{aurc.lo:.3f}, {aurc.hi:.3f}]" if _finite(aurc.lo) else ""
        fig.add_scatter(x=rep.curve.coverage, y=rep.curve.risk, mode="lines", line=dict(color=COLORS[m % 2], width=2.5),
                        name=f"{plot_text(rep.name)} (AURC {aurc.mean:.3f}{width})" if _finite(aurc.mean)
                        else plot_text(rep.name),
                        hovertemplate="coverage %{x:.0%}<br>risk %{y:.3f}<extra></extra>")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title_text="coverage (share of rows answered)", gridcolor="#e5e7eb")
    fig.update_yaxes(rangemode="tozero", title_text="error rate when answering", gridcolor="#e5e7eb")
    fig.update_layout(height=380, plot_bgcolor="white", font=FONT, margin=dict(l=10, r=10, t=70, b=40),
                      title=dict(text="Selective prediction: lower is better", x=0, y=0.97, font_size=15),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def probe_figure(summaries: Sequence, published: Mapping[str, Mapping[str, float]] | None = None) -> go.Figure:
    """Mean top probability per probe group and model (± 95% interval) against the ideal values."""
    fig = go.Figure()
    groups = list(summaries[0].groups) if summaries else []
    for m, s in enumerate(summaries):
        ivs = [s.groups[g] for g in groups]
        fig.add_bar(x=groups, y=[iv.mean for iv in ivs], name=plot_text(s.name), marker_color=COLORS[m % 2],
                    text=[f"{iv.mean:.3f}" if _finite(iv.mean) else "" for iv in ivs], textposition="inside",
                    insidetextanchor="middle",  # clear of the interval whisker and the published markers above
                    error_y=dict(type="data", symmetric=False, array=[iv.hi - iv.mean for iv in ivs],
                                 arrayminus=[iv.mean - iv.lo for iv in ivs], color="#111827", thickness=1))
    if summaries:
        ideal = summaries[0].ideal
        fig.add_scatter(x=groups, y=[ideal[g] for g in groups], mode="markers", name="ideal",
                        marker=dict(symbol="line-ew", size=90, line=dict(width=3, color="#111827")))
        fig.update_xaxes(tickvals=groups, ticktext=[f"{g}<br>(ideal {ideal[g]:.2f})" for g in groups])
    for i, (arm, values) in enumerate((published or {}).items()):
        xs = [g for g in groups if g in values]
        fig.add_scatter(x=xs, y=[values[g] for g in xs], mode="markers", name=f"published {arm}",
                        marker=dict(symbol=["diamond-open", "circle-open", "square-open", "x-thin-open"][i % 4],
                                    size=11, line=dict(width=2), color="#6b7280"))
    fig.update_yaxes(range=[0, 1.12], title_text="mean top probability", gridcolor="#e5e7eb")
    fig.update_layout(barmode="group", height=420, plot_bgcolor="white", font=FONT,
                      title=dict(text="Known-posterior probe: closer to the ideal line is better", x=0, font_size=15),
                      margin=dict(l=10, r=10, t=50, b=40), legend=dict(orientation="h", y=-0.15))
    return fig


__all__ = ["CLOSE_MARGIN", "answer_figure", "empty_figure", "probe_figure", "reliability_figure", "selective_figure"]
