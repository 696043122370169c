"""The model lists both tabs show, and the typed keys both pickers take.

``all_entries`` is the one list: shipped, packaged, the operator's endpoints, every model folder
under a models folder, then published entries (``decision_entries`` is its decision half in the
Decisions picker's order, local models first). A picker also takes a typed key: a folder or
``.gguf`` path, a cached hub id, a System One URL (``typed_entry``) or a chat endpoint
(``chat_endpoint_entry``); ``policy_entry`` and ``find_decision`` resolve what a visitor picked or
typed. On a public deployment typed paths are confined to the models folder and typed URLs are
refused unless the operator allows them, checked on the text alone so no server path is revealed.
"""

import os
from pathlib import Path

from core.models import entries
from core.models.availability import cached_snapshot, check_folder, check_package
from core.models.entries import (ALLOW_URLS_ENV, CHAT_URL_ENV, DECISION_CARD, OPTION_CARD, OPTION_DESIGN, URL_ENV,
                                 Kind, ModelEntry, local_entry, packaged_entries, parse_spec, public_deployment,
                                 published_entries, shipped_entries)


CONFINED = ("on this public Space only folders inside the models folder can be played: type a folder name "
            "from it, or pick a model from the list (other server paths are not looked at)")
"""The one refusal of a typed key or folder on a public deployment, whatever exists on disk."""


def confined_entry(path: str, models_dir: str | Path | None, kind: Kind = "policy") -> ModelEntry:
    """A typed folder on a public deployment: only an existing folder inside ``models_dir``, by a relative name.

    An absolute or ``~`` path, one that leaves the models folder and one that is not a folder in it all
    get the same refusal (``CONFINED``), so the answer never tells a visitor whether some server path exists.

    Raises:
        ValueError: no models folder is configured, or the path is not a folder inside it.
    """
    if not models_dir:
        raise ValueError("on this public Space the local-folder box is off (the app has no models folder); "
                         "pick a model from the list")
    root = Path(models_dir).resolve()
    if Path(path).is_absolute() or path.startswith("~"):
        raise ValueError(CONFINED)
    try:  # a name too long for the file system, a NUL or a lone surrogate: the same refusal, naming nothing
        target = (root / path).resolve()
        inside = target.is_relative_to(root) and target != root and target.is_dir()
    except (OSError, ValueError):
        inside = False
    if not inside:
        raise ValueError(CONFINED)
    return local_entry(target, kind, key=path)


def is_existing_path(text: str) -> bool:
    """Does the typed ``text`` name something on disk? False, not an error, for text no file system takes (a part
    over 255 bytes raised ENAMETOOLONG out of the pickers)."""
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):
        return False


def discover_local(models_dir: str | Path, kind: Kind = "policy", taken: set[str] = frozenset()) -> list[ModelEntry]:
    """Model folders under ``models_dir``, sorted by name, keyed by folder name (by path if taken).

    Policies: subfolders with a ``config.json`` that are not decision exports. Decision models:
    our exports (a ``decision.json`` card) and any loadable HF chat-model folder, which the
    decision pipeline asks by its label logits.
    """
    base = Path(models_dir).expanduser()
    if not base.is_dir():
        return []
    shown = entries.shown_path(models_dir)  # a note names no server path on a public deployment
    found = []
    for sub in sorted(p for p in base.iterdir() if p.is_dir()):
        export = (sub / DECISION_CARD).is_file() or (sub / OPTION_CARD).is_file()
        if kind == "policy" and (sub / "config.json").is_file() and not export:
            note = "local folder"
        elif kind == "decision" and (sub / OPTION_CARD).is_file():
            note = f"local {OPTION_DESIGN} in {shown}"
        elif kind == "decision" and export:
            note = f"local export in {shown}"
        elif kind == "decision" and check_folder(sub).ok:
            note = f"chat model in {shown}, through transformers' DecisionPipeline"
        else:
            continue
        key = sub.name if sub.name not in taken else str(sub)
        taken = taken | {key}
        found.append(local_entry(sub, kind, key, note))
    return found


def extra_entries() -> list[ModelEntry]:
    """The packaged chat models (when installed) as decision models, and the operator's System One endpoint."""
    out = []
    for name, dist, file, _, _ in entries.PACKAGED_MODELS:
        found = check_package(f"{dist}/{file}")
        if found.ok:
            out.append(ModelEntry(name, "decision", "local", str(found.path),
                                  note=f"real chat model (PyPI wheel {dist}, GGUF), zero-shot through DecisionPipeline"))
    url = os.environ.get(URL_ENV, "").strip()
    if url:
        out.append(ModelEntry(url, "decision", "url", url, note=f"System One endpoint from {URL_ENV}"))
    return out


def typed_entry(key: str, models_dir: str | Path | None = None) -> ModelEntry | None:
    """A key typed into the decision picker: a System One URL, a folder or .gguf path, or a cached hub id.

    Raises:
        ValueError: on a public deployment, a URL the operator has not allowed or a path outside
            ``models_dir`` (checked on the text alone, so no other server path is revealed).
    """
    key = (key or "").strip()
    public = public_deployment()
    if key.startswith(("http://", "https://")):
        if public and os.environ.get(ALLOW_URLS_ENV) != "1":
            raise ValueError("on this public Space typed System One URLs are off (the server would send requests "
                             f"wherever a visitor points it); the operator can set {URL_ENV} or {ALLOW_URLS_ENV}=1")
        return ModelEntry(key, "decision", "url", key, note="typed URL")
    if public and ("/" in key or key.startswith((".", "~"))) and cached_snapshot(key) is None:
        entry = confined_entry(key, models_dir, "decision")
        return ModelEntry(key, "decision", "local", entry.location, note="typed folder")
    if is_existing_path(key) and not public:
        return ModelEntry(key, "decision", "local", str(Path(key).expanduser()), note="typed folder")
    if key.count("/") == 1 and cached_snapshot(key) is not None:
        return ModelEntry(key, "decision", "hub", key, note="cached hub model")
    return None


def chat_endpoint_entry(spec: str, operator: bool = False) -> ModelEntry:
    """A chat endpoint (``openai:BASE_URL#MODEL``) as a policy that Live play streams from.

    Raises:
        ValueError: a typed spec on a public deployment whose operator has not allowed URLs (the
            rule for typed System One URLs), or a spec that is not ``openai:BASE_URL#MODEL``.
    """
    spec = spec.strip()
    if not operator and public_deployment() and os.environ.get(ALLOW_URLS_ENV) != "1":
        raise ValueError("on this public Space typed chat endpoints are off (the server would send requests "
                         f"wherever a visitor points it); the operator can set {CHAT_URL_ENV} or {ALLOW_URLS_ENV}=1")
    base, model = parse_spec(spec)
    return ModelEntry(f"endpoint: {model}" if operator else spec, "policy", "endpoint", f"openai:{base}#{model}",
                      note=f"OpenAI-compatible chat endpoint from {CHAT_URL_ENV}" if operator else "typed chat endpoint")


def chat_endpoint_entries() -> list[ModelEntry]:
    """The operator's chat endpoint (``CHAT_URL_ENV``), when set; a malformed value is listed as unavailable."""
    spec = os.environ.get(CHAT_URL_ENV, "").strip()
    try:
        return [chat_endpoint_entry(spec, operator=True)] if spec else []
    except ValueError:
        return [ModelEntry("endpoint (malformed)", "policy", "endpoint", spec, note=f"{CHAT_URL_ENV} is malformed")]


def all_entries(models_dir: str | Path | None = None, kind: Kind | None = None) -> list[ModelEntry]:
    """Shipped, packaged policies, local (``models_dir``), packaged decision models and the operator's
    endpoint, then published entries; optionally one kind only."""
    out: list[ModelEntry] = []
    for k in ((kind,) if kind else ("policy", "decision")):
        shipped = shipped_entries(kind=k)
        local = discover_local(models_dir, k, {e.key for e in shipped}) if models_dir else []
        packaged = packaged_entries() + chat_endpoint_entries() if k == "policy" else []
        out += shipped + packaged + local + (extra_entries() if k == "decision" else []) + published_entries(k)
    return out


def find_entry(key: str, listed: list[ModelEntry]) -> ModelEntry:
    """The entry with this key; a key that is an existing folder path becomes a local entry."""
    for entry in listed:
        if entry.key == key:
            return entry
    if key and is_existing_path(key):
        return local_entry(key)  # a typed path: keyed by what was typed
    raise KeyError(f"unknown model {key!r}: pick one from the list or type a folder path that exists")


AGENT_PREFIX = "decision:"
"""A policy key ``decision:KEY``: the ask-or-act agent on the decision model KEY (``core.clarify.calibrated_agent``)."""


def agent_entries(models_dir: str | Path | None = None) -> list[ModelEntry]:
    """Live play's agent picks: every listed decision model, the agent's reader first, then the Decisions
    picker's order."""
    listed = decision_entries(models_dir)
    return sorted(listed, key=lambda e: e.key != entries.AGENT_READER)


def agent_entry(models_dir: str | Path | None, key: str) -> ModelEntry:
    """The listed decision model a ``decision:KEY`` pick names; never a typed folder, hub id or URL, so a
    visitor cannot point the server at a path or an address through the picker."""
    name = key.removeprefix(AGENT_PREFIX)
    entry = next((e for e in agent_entries(models_dir) if e.key == name), None)
    if entry is None:
        raise KeyError(f"unknown decision model {name!r} for the ask-or-act agent: pick one from the list")
    return entry


def policy_entry(models_dir: str | None, key: str | None, path: str | None, public: bool | None = None) -> ModelEntry:
    """Live play's pick: a chat endpoint typed into either box, else the typed folder, else the picked key
    (``decision:KEY``: the ask-or-act agent's decision model, an entry of kind "decision").

    ``public`` (default: ``public_deployment()``) confines a typed folder, or a key typed into the
    picker that is not listed, to ``models_dir`` (``confined_entry``).

    Raises:
        ValueError: a refused or malformed endpoint, a typed folder a public deployment refuses, or nothing picked.
        KeyError: a key that is neither listed nor an existing path.
    """
    typed = (path or "").strip() or (key or "").strip()
    if typed.startswith("openai:"):
        return chat_endpoint_entry(typed)
    public = public_deployment() if public is None else public
    if path and path.strip():
        return confined_entry(path.strip(), models_dir) if public else local_entry(path.strip())
    if not key:
        raise ValueError("pick a model, or type the path of a local model folder")
    if key.startswith(AGENT_PREFIX):
        return agent_entry(models_dir, key)
    listed = all_entries(models_dir)
    if public and not any(e.key == key for e in listed):  # a typed key: the folder box's confinement
        return confined_entry(key.strip(), models_dir)
    return find_entry(key, listed)


def decision_entries(models_dir: str | Path | None = None, shipped_dir: Path | None = None) -> list[ModelEntry]:
    """The decision half of the one list, local models first (the Decisions picker's order)."""
    shipped = shipped_entries(shipped_dir, kind="decision")
    local = discover_local(models_dir, "decision", {e.key for e in shipped}) if models_dir else []
    return local + shipped + extra_entries() + published_entries(kind="decision")


def find_decision(models_dir: str | Path | None, key: str | None) -> ModelEntry | None:
    """The decision picker's entry with this key, else the key read as a typed folder, hub id or URL."""
    entry = next((e for e in decision_entries(models_dir) if e.key == key), None)
    return entry or (typed_entry(key, models_dir) if key else None)
