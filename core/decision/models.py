"""Which decision model answers for a checked folder, and the option scorer as a picker model.

``open_decider`` is what ``core.models.cache.ModelCache(open_decider=...)`` builds a decision model
with: our rlcd-decision-only-v1 export through the strict, hash-verifying ``load_decider``, an
option-scorer folder (``option_model.json``) through ``option_model``'s strict loader as an
``OptionDecider``, any other model through transformers' ``DecisionPipeline``, a URL as a
``SystemOneEndpoint`` (``SYSTEMONE_API_KEY`` is sent only to ``SYSTEMONE_URL``, never to a typed URL).
Entries, availability, typed keys and the load-once cache are ``core.models``'.
"""

import os
from pathlib import Path

from core.decision import system_one
from core.decision.questions import entropy_confidence
from core.models.entries import DECISION_CARD, KEY_ENV, OPTION_CARD, URL_ENV, ModelEntry


def open_decider(entry: ModelEntry, path: Path | None):
    """Our export through ``load_decider``; a URL as an endpoint; any other model through the pipeline."""
    if entry.source == "url":
        from core.decision.endpoint import SystemOneEndpoint

        own = entry.location == os.environ.get(URL_ENV, "").strip() and os.environ.get(KEY_ENV)
        return SystemOneEndpoint(entry.location, api_key_env=KEY_ENV if own else None)
    if path.is_dir() and (path / OPTION_CARD).is_file():
        from core.decision.option_scorer import OptionScorer  # torch loads with the first model, not the app

        return OptionDecider(OptionScorer.load(path))
    if path.is_dir() and (path / DECISION_CARD).is_file():
        from core.decision.export import load_decider  # torch loads with the first model, not the app

        return load_decider(path)
    from core.decision.pipeline import load_pipeline_decider

    try:
        return load_pipeline_decider(path, name=entry.key)
    except (OSError, ValueError, KeyError) as err:  # transformers raises many types for a broken folder
        raise ValueError(f"{entry.key}: could not load {path} as a chat model: {type(err).__name__}: {err}") from None


class OptionDecider:
    """The option scorer as a picker model: System One answers with the tab's extras, its own limits.

    ``confidence`` stays the head's (the saved ``confidence_mode``) and ``max_p`` sits beside it;
    ``decide`` is the scorer's own, so calibration reports and the probe treat it like a letter model.
    """

    path_name = "one pass"
    confidence_source = "confidence head"
    """What an answer's ``confidence`` is (the letter models': System One's rescaled max p)."""
    own_vocabulary = True
    """Its tokenizer is decision-rlcd's, fitted on the same training sources, so familiarity applies."""

    def __init__(self, scorer):
        self.scorer, self.tokenizer = scorer, scorer.tokenizer
        self.max_options, self.max_tokens = scorer.settings.max_options, scorer.settings.max_tokens

    def score(self, state, questions=None, **_) -> dict:
        """``{"answers", "usage"}``; answers add ``entropy_confidence``, usage the path and question count."""
        state, specs = system_one.split_request(state, questions)
        out = self.scorer.score(state, specs)
        for ans in out["answers"].values():
            ans["entropy_confidence"] = entropy_confidence(list(system_one.probabilities_of(ans).values()))
        out["usage"].update(questions=len(out["answers"]), path=self.path_name)
        return out

    def decide(self, state, questions):
        return self.scorer.decide(state, questions)

    def request_errors(self, state, questions) -> dict[str, str]:
        """Its limits on this request, ``{"state" | "questions": message}`` (the token count covers the whole
        request, since every question shares one pass); nothing is truncated."""
        from core.decision.option_request import OptionRequestError

        try:
            self.scorer.prepare(state, questions)
        except OptionRequestError as err:
            return {"state" if str(err).startswith("state") else "questions": str(err)}
        return {}
