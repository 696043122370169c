"""ClarifyLab app: wiring only. Each tab is built by a module in demo/.

Run: ``python app.py [--host H] [--port P] [--decision-models D]`` (offline; no model loads at
start-up). ``--decision-models`` names a folder of extra rlcd-decision-only-v1 exports.
"""

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from demo import decisions  # noqa: E402

DECISION_MODELS = os.environ.get("CLARIFYLAB_DECISION_MODELS", "")


def build(decision_models: str = DECISION_MODELS) -> gr.Blocks:
    """The whole app: one tab per capability."""
    with gr.Blocks(title="ClarifyLab", analytics_enabled=False) as blocks:
        gr.Markdown(
            "# ClarifyLab\nA workbench for small language models that *ask before they act* and "
            "*decide with calibrated probabilities*. The Replays and Live play tabs are being built; "
            "see the README for what exists today."
        )
        with gr.Tabs():
            with gr.Tab("Decisions", id="decisions"):
                decisions.build(blocks, decision_models)
    return blocks


demo = build()

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--decision-models", default=None, help="folder of extra decision exports")
    args = parser.parse_args()
    app = demo if args.decision_models is None else build(args.decision_models)
    print(f"ClarifyLab listening on http://{args.host}:{args.port}", flush=True)
    app.launch(server_name=args.host, server_port=args.port)
