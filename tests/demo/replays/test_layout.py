"""Replays layout: a run or scenario picked while the last comparison still runs is compared after it."""

import gradio as gr

from demo.replays import layout


def test_a_pick_made_during_a_comparison_is_not_dropped(tmp_path):
    with gr.Blocks() as demo:
        layout.build(demo, tmp_path / "replays")
    modes = {d.get("api_name"): d.get("trigger_mode") for d in demo.get_config_file()["dependencies"]}
    # Gradio's default for input events ("once") ignores a trigger while the event is pending: run b picked right
    # after run a would never be compared (the flake in tests/app/test_replays_browser.py's switch test)
    assert modes["compare"] == "always_last" and modes["compare_episode"] == "always_last"
