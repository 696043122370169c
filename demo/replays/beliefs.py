"""Belief bars of the Replays tab: a decision-driven agent's belief per field beside the true posterior.

For every required field of a cued (v3) episode, bars over the field's values: the generator's true
posterior (from the scenario record), the agent's belief read from the request, and its belief after
the user's answer when it asked. Everything comes from the episode log (``Episode.beliefs``), so the
viewer never runs a model. ``show_beliefs`` is the handler; it stays apart from ``handlers`` so the
cued tasks' view is one file. The figure and its note are ``demo.plots``' (Live play draws them too).
"""

import gradio as gr

from core.runs import replays
from demo.plots import belief_figure, beliefs_note

NO_BELIEFS = "No belief bars: this episode's agent logged no beliefs (only `decision:MODEL` agents on cued scenarios do)."


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
