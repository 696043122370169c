"""ClarifyLab app: wiring only. Each tab is built by a module in demo/.

Run: ``python app.py [--host H] [--port P]``.
"""

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

with gr.Blocks(title="ClarifyLab") as demo:
    gr.Markdown(
        "# ClarifyLab\nA workbench for small language models that *ask before they act* and "
        "*decide with calibrated probabilities*. The Replays, Live play and Decisions tabs are "
        "being built; see the README for what exists today."
    )

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    args = parser.parse_args()
    print(f"ClarifyLab listening on http://{args.host}:{args.port}", flush=True)
    demo.launch(server_name=args.host, server_port=args.port)
