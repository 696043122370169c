"""Serve one of our decision exports at ``/v1/systemone`` with transformers' own serving machinery.

``python -m core.decision.serve checkpoints/decision-rlcd --host 127.0.0.1 --port 8000`` runs
``transformers serve`` (its FastAPI app, model manager and System One handler) with the export as
the forced model; ``core.decision.auto_model`` makes it load as our letter readout (or a pooled
readout, ``checkpoints/decision-smollm2-pooled-rlcd``), so answers equal the local decider's. Needs
transformers' serving extra (fastapi, uvicorn, openai; requirements.txt).
A request body over ``--max-body-bytes`` is answered 413 before it is parsed, and a state or
question that cannot fit the token limits is refused (400) before it is tokenized
(``core.decision.decider.unfittable``), so a huge request costs neither memory nor minutes.
"""

import argparse
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import core.decision.auto_model  # noqa: F401  registers our folders as decision models, here and in every process
from core.records import port
# transformers serve (5.25 on) spawns to hold the model: a spawned process imports this module, not serve()

MAX_BODY_BYTES = 1 << 20
"""Default cap on one request body (1 MiB: 64 questions of 448 tokens and a full state fit many times)."""
MAX_NESTING = 32
"""Deepest bracket nesting a request body may have (a System One request with a record state is 4-5 deep)."""
CLOSED_PATHS = ("/reset",)
"""transformers serve's routes this server closes: ``/reset`` unloads the models, the one pinned model included."""


class BodyLimit:
    """ASGI middleware: a body over ``max_bytes`` is answered 413 naming the cap; the body is read
    before the app sees it and at most the cap of it is kept, so a larger one is never held whole. A closed
    route (``CLOSED_PATHS``) is answered 403 and a body nested past ``MAX_NESTING`` 400, each in words."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body, seen, more = b"", 0, True
        while more:  # past the cap the rest is read and dropped, so the client gets the answer
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            chunk = message.get("body", b"")
            seen += len(chunk)
            body = body + chunk if seen <= self.max_bytes else b""
            more = message.get("more_body", False)
        if seen > self.max_bytes:
            return await _answer(scope, send, 413, f"request body too large: the limit is {self.max_bytes:,} bytes "
                                                  "(--max-body-bytes)")
        if scope.get("path") in CLOSED_PATHS:
            return await _answer(scope, send, 403, f"{scope['path']} is closed: this server serves one pinned model, "
                                                  "and any client could unload it for every other")
        if (depth := nesting(body)) > MAX_NESTING:
            return await _answer(scope, send, 400, f"the request is nested {depth} levels deep; at most {MAX_NESTING} "
                                                  "(a System One request is a few levels deep)")
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


async def _answer(scope, send, status: int, detail: str) -> None:
    from starlette.responses import JSONResponse

    await JSONResponse({"detail": detail}, status_code=status)(scope, None, send)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def nesting(body: bytes) -> int:
    """How deep a JSON body's brackets nest (brackets inside strings do not count); any other body reads 0 deep.
    A state 800 arrays deep passed the body cap, then the model process's pickling recursed: the request hung."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


@contextmanager
def _capped_bodies(max_bytes: int):
    """transformers' ``build_server`` with ``BodyLimit`` added, while ``Serve`` builds its app."""
    from transformers.cli.serving import server as serving

    build = serving.build_server

    def capped(*args, **kwargs):
        app = build(*args, **kwargs)
        app.add_middleware(BodyLimit, max_bytes=max_bytes)
        return app

    serving.build_server = capped
    try:
        yield
    finally:
        serving.build_server = build


def serve(directory: str | Path, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          max_body_bytes: int = MAX_BODY_BYTES):
    """Start ``transformers serve`` on ``directory`` (blocks until the server stops)."""
    from transformers.utils.import_utils import is_serve_available

    if not is_serve_available():
        raise SystemExit("transformers' serving extra is missing: pip install fastapi uvicorn openai "
                         "(pinned in requirements.txt)")
    from core.decision import pooled
    from core.decision.auto_model import FORMATS, read_export_card

    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir() or (read_export_card(folder) is None and not (folder / pooled.CARD_FILE).is_file()):
        raise SystemExit(f"{directory} is not one of our decision folders (no decision.json card of the formats "
                         f"{' or '.join(FORMATS)}, nor a pooled readout's {pooled.CARD_FILE})")
    if (folder / pooled.CARD_FILE).is_file() and not (folder / "config.json").is_file():
        raise SystemExit(f"{directory} is a pooled readout saved without its base's config.json and tokenizer, which "
                         "transformers serve reads: save it again with core.decision.pooled.save_pooled")
    if max_body_bytes < 1024:
        raise SystemExit(f"--max-body-bytes must be >= 1024, got {max_body_bytes}")
    from transformers.cli.serve import Serve

    with _capped_bodies(max_body_bytes):
        Serve(force_model=str(folder), host=host, port=port, device="cpu", log_level=log_level)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m core.decision.serve", description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="a decision export (letter readout, adapter arm) or pooled-readout folder")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8000, help="listen port (default 8000)")
    parser.add_argument("--log-level", default="warning", help="transformers' log level")
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                        help=f"largest request body accepted (default {MAX_BODY_BYTES}); larger is answered 413")
    args = parser.parse_args(argv)
    serve(args.directory, args.host, args.port, args.log_level, args.max_body_bytes)


if __name__ == "__main__":
    main(sys.argv[1:])
