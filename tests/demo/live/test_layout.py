"""Live play layout: the answer box never cuts a paste and says "too long" before sending."""

import gradio as gr

from core.live.session import MAX_ANSWER_CHARS
from demo.live import layout


def test_the_answer_box_counts_in_the_browser_and_never_cuts(tmp_path):
    with gr.Blocks() as demo:
        layout.build(demo, tmp_path / "replays", tmp_path / "models")
    config = demo.get_config_file()
    box = next(c for c in config["components"] if c.get("props", {}).get("elem_id") == "live-reply")
    assert box["props"].get("max_length") is None  # a paste reaches the server whole, which refuses it
    counter = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "live-reply-count")
    counting = [d for d in config["dependencies"] if counter in d["outputs"] and d.get("js")]
    assert len(counting) == 1 and counting[0]["backend_fn"] is False  # runs in the browser, no server call
    assert f"> {MAX_ANSWER_CHARS}" in counting[0]["js"] and "too long" in counting[0]["js"]
