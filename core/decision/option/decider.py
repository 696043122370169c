"""The option scorer as a decision model: System One answers with the tab's extras, its own limits.

``OptionDecider`` wraps a loaded ``OptionScorer`` (``core.decision.option.scorer``) so the Decisions
tab, the calibration reports and the probe ask it exactly as they ask a letter model.
"""

from core.decision import system_one
from core.decision.questions import entropy_confidence


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
        from core.decision.option.request import OptionRequestError

        try:
            self.scorer.prepare(state, questions)
        except OptionRequestError as err:
            return {"state" if str(err).startswith("state") else "questions": str(err)}
        return {}
