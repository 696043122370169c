"""Decision rows on disk: JSONL files (one DecisionRow per line) and the dataset manifest.

The manifest records the seed, the spec, and each file's row count, context count and sha256, so
a training run can check that it reads exactly the data its card names.
"""

import hashlib
import json
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict, ValidationError

from core.clarify.cued import KINDS
from core.decision.data.rows import DecisionRow

MANIFEST = "manifest.json"


class FileEntry(BaseModel):
    """One JSONL file of the dataset."""

    model_config = ConfigDict(extra="forbid")

    rows: int
    contexts: int
    sha256: str
    sources: dict[str, int]
    """Rows per source."""


class Manifest(BaseModel):
    """What ``python -m train.decision_data`` built, and from what."""

    model_config = ConfigDict(extra="forbid")

    seed: int
    contexts: dict[str, int]
    """Contexts requested per partition."""
    source_weights: list[float]
    cued: dict[str, int] = {}
    """Cued clarify-request contexts added per training partition (absent in manifests before them)."""
    cued_kinds: list[str] = list(KINDS)
    """Cue kinds the cued contexts keep (every kind in manifests before the option)."""
    probe_per_kind: int
    files: dict[str, FileEntry]
    """File name (e.g. ``test.jsonl``) -> its entry."""
    phrasebook: str | None = None
    """The natural tickets' phrasebook when not v1 (absent: v1, and every manifest before phrasebooks)."""


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (a model's weights need not fit twice in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_rows(path: Path, rows: Iterable[DecisionRow]) -> FileEntry:
    """Write rows as JSONL and return their manifest entry."""
    rows = list(rows)
    Path(path).write_text("".join(r.model_dump_json() + "\n" for r in rows))
    sources: dict[str, int] = {}
    for r in rows:
        sources[r.source] = sources.get(r.source, 0) + 1
    return FileEntry(rows=len(rows), contexts=len({r.context_id for r in rows}),
                     sha256=sha256_file(path), sources=sources)


def read_rows(path: Path) -> list[DecisionRow]:
    """Read a JSONL file of rows; a bad line raises ValueError naming the file and line."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(DecisionRow.model_validate_json(line))
        except ValidationError as exc:
            raise ValueError(f"{path}:{n}: not a decision row ({exc.errors()[0]['msg']})") from None
    return rows


def read_manifest(data_dir: Path) -> Manifest:
    """Load a dataset directory's manifest."""
    path = Path(data_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; build the data with `python -m train.decision_data`")
    return Manifest.model_validate_json(path.read_text())


def read_partition(data_dir: Path, name: str, verify: bool = True) -> list[DecisionRow]:
    """Read ``name``.jsonl from a dataset directory, checking its hash against the manifest."""
    path = Path(data_dir) / f"{name}.jsonl"
    if verify:
        entry = read_manifest(data_dir).files.get(path.name)
        if entry is None:
            raise ValueError(f"{path.name} is not listed in {Path(data_dir) / MANIFEST}")
        if sha256_file(path) != entry.sha256:
            raise ValueError(f"{path} does not match the sha256 in its manifest")
    return read_rows(path)


def write_manifest(data_dir: Path, manifest: Manifest) -> None:
    """Write the manifest beside the data files."""
    (Path(data_dir) / MANIFEST).write_text(json.dumps(manifest.model_dump(exclude_none=True), indent=2) + "\n")
