"""Serve one of our decision exports at ``/v1/systemone`` with transformers' own serving machinery.

``python -m core.decision.serve checkpoints/decision-rlcd --host 127.0.0.1 --port 8000`` runs
``transformers serve`` (its FastAPI app, model manager and System One handler) with the export as
the forced model; ``core.decision.auto_model`` makes it load as our letter readout, so answers equal
the local Decider's. Needs transformers' serving extra (fastapi, uvicorn, openai; requirements.txt).
"""

import argparse
import sys
from pathlib import Path


def serve(directory: str | Path, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning"):
    """Start ``transformers serve`` on ``directory`` (blocks until the server stops)."""
    from transformers.utils.import_utils import is_serve_available

    if not is_serve_available():
        raise SystemExit("transformers' serving extra is missing: pip install fastapi uvicorn openai "
                         "(pinned in requirements.txt)")
    import core.decision.auto_model  # noqa: F401  (registers our exports as decision models)
    from core.decision.auto_model import read_export_card

    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir() or read_export_card(folder) is None:
        raise SystemExit(f"{directory} is not an rlcd-decision-only-v1 export (no decision.json card of that format)")
    from transformers.cli.serve import Serve

    Serve(force_model=str(folder), host=host, port=port, device="cpu", log_level=log_level)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m core.decision.serve", description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="an rlcd-decision-only-v1 export folder")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="listen port (default 8000)")
    parser.add_argument("--log-level", default="warning", help="transformers' log level")
    args = parser.parse_args(argv)
    serve(args.directory, args.host, args.port, args.log_level)


if __name__ == "__main__":
    main(sys.argv[1:])
