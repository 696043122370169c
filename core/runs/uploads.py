"""Uploaded runs held for browser sessions, with a bound on memory per session and overall.

A session's state keeps only opaque keys; the runs themselves live in one process-wide store
that drops the least recently used upload when a session holds more than ``PER_SESSION`` or
all sessions together hold more than ``TOTAL_BYTES``. A dropped upload reads as "upload it
again", never as a crash, and a closed session frees its uploads at once (``release``).
"""

import secrets
import sys
import threading
from collections import OrderedDict

PER_SESSION = 4
"""Uploads one session keeps open; a fifth drops that session's oldest."""
TOTAL_BYTES = 400 * 2**20
"""Estimated bytes of every session's uploads together (a 50 MB log is about 2x that in memory)."""


def run_bytes(run) -> int:
    """Estimated resident bytes of a ``LoadedRun``: its JSON lines plus its pandas table."""
    return sum(sys.getsizeof(line) for line in run.lines) + int(run.table.memory_usage(deep=True).sum())


class UploadStore:
    """Key -> uploaded run, least recently used first; thread-safe (sessions upload concurrently)."""

    def __init__(self, per_session: int = PER_SESSION, total_bytes: int = TOTAL_BYTES):
        self.per_session, self.total_bytes = per_session, total_bytes
        self._runs: OrderedDict[str, tuple[str, object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, session: str, run) -> str:
        """Keep ``run`` for ``session``; returns its key. Older uploads may be dropped to fit."""
        key = f"{session}:{secrets.token_hex(8)}"
        size = run_bytes(run)
        with self._lock:
            self._runs[key] = (session, run, size)
            mine = [k for k, (s, _, _) in self._runs.items() if s == session]
            for old in mine[:-self.per_session]:
                del self._runs[old]
            while self.bytes() > self.total_bytes and len(self._runs) > 1:
                self._runs.popitem(last=False)
        return key

    def get(self, key: str):
        """The run under ``key``, or None once it was dropped or released."""
        with self._lock:
            if key not in self._runs:
                return None
            self._runs.move_to_end(key)
            return self._runs[key][1]

    def holds(self, key: str) -> bool:
        """Whether ``key`` is still held (without counting as a use)."""
        return key in self._runs

    def release(self, keys) -> None:
        """Free a closed session's uploads (gradio calls this when the session's state is deleted)."""
        with self._lock:
            for key in keys or ():
                self._runs.pop(key, None)

    def bytes(self) -> int:
        return sum(size for _, _, size in self._runs.values())

    def __len__(self) -> int:
        return len(self._runs)


def session_of(keys) -> str:
    """The session id inside a session's store keys (``session:token``), or a new random one. Values that are
    no store key (a page's own Live play runs) are passed over: read as "no session yet", they once gave each
    upload a fresh session, past the per-session cap."""
    key = next((k for k in keys or () if isinstance(k, str) and ":" in k), None)
    return key.split(":", 1)[0] if key else secrets.token_hex(8)


STORE = UploadStore()
"""The process's uploads (the viewer's only mutable global; bounded as above)."""
