"""The labelled decision row: one question about one state, with its options and answer.

Every data source (triage tickets, order records, access policies) emits these records, and every
training arm and evaluation reads them, so the label lives in exactly one typed place. A bandit
arm never gets the row itself: it gets only the prompt fields and a reward callback (see
``core.decision.training``), which is how we guarantee it never sees ``label``.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

Kind = Literal["choice", "score", "noul"]
"""Question primitive: unordered options, ordered levels (low to high), or yes/no."""

NOTA = "None of the above"
"""The option text injected for "none of the above"; always the last option when present."""

NOUL_OPTIONS = ["true", "false"]
"""A noul question's options, exactly, in this order."""


class DecisionRow(BaseModel):
    """One decision question with its answer, as written to the dataset's JSONL files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_id: str
    """Identifies the state; every question about one state shares it (splits group by it)."""
    source: str
    """Generator that wrote the row (``triage``, ``orders``, ``access``)."""
    state: str
    """The context shown to the model (plain text or JSON-ish)."""
    question: str
    options: list[str]
    """2..26 option texts in display order."""
    kind: Kind
    label: int
    """0-based index of the correct option in ``options``."""
    posterior: list[float] | None = None
    """Exact P(option is the label | state, options) under the generator, when known."""
    tags: list[str] = []
    """Facts for slicing metrics, e.g. ``two_cue``, ``nota_answer``, ``nota_distractor``."""

    @model_validator(mode="after")
    def _check(self) -> "DecisionRow":
        k = len(self.options)
        if not 2 <= k <= 26:
            raise ValueError(f"{self.context_id}: {k} options (need 2..26)")
        if not 0 <= self.label < k:
            raise ValueError(f"{self.context_id}: label {self.label} outside 0..{k - 1}")
        if self.kind == "noul" and self.options != NOUL_OPTIONS:
            raise ValueError(f"{self.context_id}: noul options must be {NOUL_OPTIONS}, got {self.options}")
        if self.posterior is not None:
            if len(self.posterior) != k or abs(sum(self.posterior) - 1.0) > 1e-6:
                raise ValueError(f"{self.context_id}: posterior must have {k} entries summing to 1")
        return self

    @property
    def prompt_fields(self) -> tuple[str, str, list[str]]:
        """What a model may see: (state, question, options); never the label."""
        return self.state, self.question, list(self.options)

    def correct(self, option: int) -> float:
        """1.0 when ``option`` (an index into ``options``) is the label, else 0.0."""
        return 1.0 if option == self.label else 0.0


def one_hot(index: int, k: int) -> list[float]:
    """The posterior of a deterministic answer: 1.0 at ``index`` of ``k`` options."""
    return [1.0 if i == index else 0.0 for i in range(k)]


def determined_row(context_id: str, source: str, state: str, question: str, options: list[str],
                   kind: Kind, label: int, tags: list[str]) -> DecisionRow:
    """A row whose answer the state fully determines, so its posterior is one-hot at ``label``."""
    return DecisionRow(context_id=context_id, source=source, state=state, question=question,
                       options=options, kind=kind, label=label, posterior=one_hot(label, len(options)), tags=tags)
