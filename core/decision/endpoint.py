"""Any System One endpoint by URL as a decision model (``POST {"state", "questions"}`` -> answers).

``SystemOneEndpoint("http://host:8000/v1/systemone")`` has the Decider interface, so Ask, the
calibration reports and Compare use a remote model exactly as a local one. Every way an endpoint
can fail (refused connection, HTTP 4xx/5xx, timeout, non-JSON, wrong shape, fewer answers than
questions) raises ``EndpointError`` with a message saying which. An API key is read from the
environment variable the caller names; it is sent as a bearer token and never logged, shown or
kept in a message or repr.

    model = SystemOneEndpoint("http://127.0.0.1:8000/v1/systemone", api_key_env="SYSTEMONE_KEY")
    SystemOneEndpoint("http://127.0.0.1:8000/v1/systemone#Qwen/Qwen2.5-0.5B-Instruct")  # names the model
    model.score({"state": "...", "questions": {...}})
"""

import json
import math
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping

from core.decision import system_one
from core.decision.model import ENDPOINT_DESIGN, REPORTED_SOURCE

PATH = "/v1/systemone"
DETAIL_CHARS = 300
"""How much of an error body a message quotes."""


class EndpointError(ValueError):
    """A System One endpoint that did not give usable answers, and why (never holds the API key)."""


def endpoint_url(url: str) -> str:
    """``url`` checked: http(s), a host, and the ``/v1/systemone`` path (added to a bare base)."""
    parts = urllib.parse.urlsplit((url or "").strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"{url!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000{PATH}")
    if parts.username or parts.password:
        raise EndpointError("put the API key in an environment variable, not in the URL")
    path = parts.path.rstrip("/")
    if path in ("", "/v1"):
        path = PATH
    if not path.endswith(PATH):
        raise EndpointError(f"{url!r} does not end with {PATH}")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class SystemOneEndpoint(system_one.SystemOneModel):
    """A remote System One model; ``timeout`` in seconds per request."""

    path_name = "endpoint"
    design = ENDPOINT_DESIGN
    confidence_source = REPORTED_SOURCE

    def __init__(self, url: str, *, model: str = "", api_key_env: str | None = None, timeout: float = 30.0):
        self.url = endpoint_url(url)
        self.model = model or urllib.parse.unquote(urllib.parse.urlsplit(url.strip()).fragment)
        """The request's ``model``: a server that serves several needs it; ``URL#model`` names it too."""
        self.timeout = float(timeout)
        self.name = self.url + (f" ({model})" if model else "")
        self._key_env = api_key_env or None
        if self._key_env and not os.environ.get(self._key_env):
            raise EndpointError(f"the API key variable {self._key_env} is not set in this environment")

    def __repr__(self) -> str:
        return f"SystemOneEndpoint({self.url!r}, model={self.model!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key_env:
            headers["Authorization"] = "Bearer " + os.environ[self._key_env]
        return headers

    def post(self, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON; the parsed JSON answer, or ``EndpointError`` saying what went wrong."""
        data = json.dumps({**({"model": self.model} if self.model else {}), **body}).encode()
        req = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise EndpointError(f"{self.url} answered HTTP {err.code} {err.reason}: {_detail(err.read())}") from None
        except (TimeoutError, socket.timeout):
            raise EndpointError(f"{self.url} did not answer within {self.timeout:g} s (timeout)") from None
        except urllib.error.URLError as err:
            reason = err.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise EndpointError(f"{self.url} did not answer within {self.timeout:g} s (timeout)") from None
            if isinstance(reason, ConnectionRefusedError):
                raise EndpointError(f"{self.url} refused the connection: is the server running on that "
                                    "host and port?") from None
            raise EndpointError(f"could not reach {self.url}: {reason}") from None
        except (ConnectionError, OSError) as err:
            raise EndpointError(f"could not reach {self.url}: {type(err).__name__}: {err}") from None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = raw[:80].decode("utf-8", "replace")
            raise EndpointError(f"{self.url} answered with something that is not JSON: {text!r}") from None

    def _run(self, state: Any, specs: Mapping[str, Any]) -> tuple[dict, int]:
        out = self.post({"state": state, "questions": dict(specs)})
        answers = out.get("answers") if isinstance(out, dict) else None
        if not isinstance(answers, dict):
            raise EndpointError(f"{self.url} answered without an 'answers' object (got {_short(out)})")
        missing = [name for name in specs if name not in answers]
        if missing:
            raise EndpointError(f"{self.url} answered {len(specs) - len(missing)} of {len(specs)} questions; "
                                f"no answer for {', '.join(map(repr, missing))}")
        for q in system_one.parse(specs):
            check_answer(self.url, q, answers[q.name])
        usage = out.get("usage") if isinstance(out.get("usage"), dict) else {}
        tokens = usage.get("input_tokens")
        return {name: answers[name] for name in specs}, tokens if isinstance(tokens, int) else 0


def open_model(url: str, name: str = "") -> SystemOneEndpoint:
    """``core.decision.model.KINDS``' loader: the endpoint at ``url``. ``SYSTEMONE_API_KEY`` is sent only to
    the operator's own ``SYSTEMONE_URL``, never to a typed URL."""
    from core.models.entries import KEY_ENV, URL_ENV

    own = url == os.environ.get(URL_ENV, "").strip() and os.environ.get(KEY_ENV)
    return SystemOneEndpoint(url, api_key_env=KEY_ENV if own else None)


def check_answer(url: str, q, ans: Any) -> None:
    """Refuse an answer that is not System One's shape for ``q`` (type, keys, a distribution)."""
    where = f"{url}: the answer to {q.name!r}"
    if not isinstance(ans, dict) or ans.get("type") != q.type:
        raise EndpointError(f"{where} is not a {q.type} answer (got {_short(ans)})")
    if q.type == "noul":
        p = ans.get("noul")
        if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise EndpointError(f"{where} needs 'noul', a probability in [0, 1] (got {_short(p)})")
        return
    probs = ans.get("probabilities")
    if not isinstance(probs, dict) or set(probs) != set(q.options):
        raise EndpointError(f"{where} needs 'probabilities' for exactly {list(q.options)} (got {_short(probs)})")
    values = list(probs.values())
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values) or \
            not system_one.is_finite_distribution([float(v) for v in values]):
        raise EndpointError(f"{where}: its probabilities are not a distribution (sum {sum(values)!r})")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _detail(raw: bytes) -> str:
    """The useful part of an error body: FastAPI's ``detail`` messages, else the text."""
    text = raw.decode("utf-8", "replace")
    try:
        detail = json.loads(text).get("detail", text)
    except (json.JSONDecodeError, AttributeError):
        detail = text
    if isinstance(detail, list):  # FastAPI validation: [{"loc", "msg", "type"}]
        detail = "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
    detail = str(detail).strip() or "(empty body)"
    return detail if len(detail) <= DETAIL_CHARS else detail[:DETAIL_CHARS - 3] + "..."
