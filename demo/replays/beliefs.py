"""Belief bars of the Replays tab: a decision-driven agent's belief per field beside the true posterior.

For every required field of a cued (v3) episode, bars over the field's values: the generator's true
posterior (from the scenario record), the agent's belief read from the request, and its belief after
the user's answer when it asked. Everything comes from the episode log (``Episode.beliefs``), so the
viewer never runs a model. ``show_beliefs`` is the handler; it stays apart from ``handlers`` so the
cued tasks' view is one file.
"""

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.clarify.cued import posterior
from core.clarify.families import FIELDS
from core.clarify.rubrics import field_weight
from core.records import Episode
from core.runs import replays, transcripts
from demo.plots import label

SERIES_COLORS = {"true posterior": "#9D9D9D", "model, from the request": "#2F4B7C", "model, after the answer": "#1B9E9E"}
NO_BELIEFS = "No belief bars: this episode's agent logged no beliefs (only `decision:MODEL` agents on cued scenarios do)."


def _asked_turns(episode: Episode) -> dict[str, int]:
    return {step.asked: step.turn for step in episode.beliefs.steps if step.asked}


def beliefs_note(episode: Episode) -> str:
    """One line per field: the gain the agent saw at the start against the cost, and what it did."""
    b = episode.beliefs
    start, asked = b.steps[0], _asked_turns(episode)
    lines = [f"Beliefs of **{transcripts.inert(b.model)}**; a question costs {b.cost:.2f}."]
    for field in episode.scenario.required_keys:
        gain = start.gains.get(field, 0.0)
        did = f"asked at turn {asked[field]}" if field in asked else "not asked"
        lines.append(f"- {transcripts.inert(field)}: expected gain {gain:.3f} "
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


def show_beliefs(root, uploads, key):
    """The picked episode's belief note and bars (hidden when its agent logged no beliefs)."""
    run, _, episode_id = (key or "").partition("|")
    try:
        episode = replays.find_episode(root, run, episode_id, uploads) if key else None
    except replays.VIEW_ERRORS:
        episode = None
    if episode is None or episode.beliefs is None or not episode.beliefs.steps:
        return NO_BELIEFS if key else "", gr.update(value=None, visible=False)
    return beliefs_note(episode), gr.update(value=belief_figure(episode), visible=True)
