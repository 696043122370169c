"""The option scorer as a decision model: System One answers with the tab's extras, its own limits.

``OptionDecider`` wraps a loaded ``OptionScorer`` (``core.decision.option.scorer``) so the Decisions
tab, the calibration reports and the probe ask it exactly as they ask a letter model; ``open_model``
is its row's loader in ``core.decision.model.KINDS``.
"""

from core.decision import system_one
from core.decision.evaluation.familiarity import Familiarity, by_vocabulary
from core.decision.model import HEAD_SOURCE, OPTION_DESIGN
from core.decision.questions import entropy_confidence


class OptionDecider:
    """The option scorer as a picker model (a ``DecisionModel``): System One answers, its own limits.

    ``confidence`` stays the head's (the saved ``confidence_mode``) and ``max_p`` sits beside it;
    ``decide`` is the scorer's own, so calibration reports and the probe treat it like a letter model.
    """

    path_name = "one pass"
    design = OPTION_DESIGN
    confidence_source = HEAD_SOURCE
    """What an answer's ``confidence`` is (the letter models': System One's rescaled max p)."""

    def __init__(self, scorer, name: str = ""):
        self.scorer, self.tokenizer, self.name = scorer, scorer.tokenizer, name
        self.training_tokenizer = scorer.tokenizer
        """decision-rlcd's tokenizer, fitted on the same training sources, so familiarity applies."""
        self.max_options, self.max_tokens = scorer.settings.max_options, scorer.settings.max_tokens

    def state_familiarity(self, text: str) -> Familiarity | None:
        return by_vocabulary(self.training_tokenizer, text)

    def _asked(self, questions):
        """The request's questions as the scorer takes them: an Ask's kept parse, else the specs."""
        from core.decision.option.request import OptionQuestion

        kept = system_one.kept_parse(questions, OptionQuestion)
        return questions if kept is None else kept

    def score(self, state, questions=None, **_) -> dict:
        """``{"answers", "usage"}``; answers add ``entropy_confidence``, usage the path and question count."""
        state, specs = system_one.split_request(state, questions)
        out = self.scorer.score(state, self._asked(specs))
        for ans in out["answers"].values():
            ans["entropy_confidence"] = entropy_confidence(list(system_one.probabilities_of(ans).values()))
        out["usage"].update(questions=len(out["answers"]), path=self.path_name)
        return out

    def decide(self, state, questions):
        return self.scorer.decide(state, questions)

    def limit_errors(self, state, questions) -> dict[str, str]:
        """Its limits on this request, ``{"state" | "questions": message}`` (the token count covers the whole
        request, since every question shares one pass); nothing is truncated."""
        from core.decision.option.request import OptionRequestError

        try:
            self.scorer.prepare(state, self._asked(questions))
        except OptionRequestError as err:
            return {"state" if str(err).startswith("state") else "questions": str(err)}
        return {}


def open_model(directory, name: str = "") -> OptionDecider:
    """``core.decision.model.KINDS``' loader: a verified option-scorer folder (hashes checked, no remote code)."""
    from core.decision.option.scorer import OptionScorer  # torch loads with the first model, not the app

    return OptionDecider(OptionScorer.load(directory), name)
