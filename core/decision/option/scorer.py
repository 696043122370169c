"""The option scorer: one forward pass over a state and all its questions, answers in System One shapes.

``OptionScorer.score(state, questions)`` validates and tokenizes the request (``request``),
runs ONE forward pass under the block-diagonal mask, scores each option at its marker, applies the
saved temperature per question type and answers with transformers' own System One shapes
(``transformers.decision.Question.answer``): choice -> choice/confidence/probabilities, score ->
score/legend/confidence/probabilities, noul -> noul; every answer adds ``max_p`` and, for noul,
``confidence``. ``confidence`` is the confidence head's P(top option right) under the saved
``confidence_mode: head`` and the max probability under ``max_p``.

    scorer = OptionScorer.load("checkpoints/option-scorer")
    scorer.score({"status": "SHIPPED"}, {"st": {"type": "choice", "criteria": {"a": "shipped", "b": "lost"}}})
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch
from transformers.decision.template_utils import Question as SystemOneQuestion

from core.decision.option.model import (
    OptionModel,
    Settings,
    confidence_features,
    load_option_model,
)
from core.decision.option.request import (
    Encoded,
    OptionQuestion,
    batch_tensors,
    encode,
    pack,
    parse_questions,
)
from core.decision.questions import Answer, Question, make_answer

PATHS = ("packed", "per_question")


@dataclass(frozen=True)
class Outputs:
    """Per question (rows), padded to the most options (columns); ``valid`` marks real options."""

    logits: torch.Tensor
    """[Q, K] raw option scores (before temperature)."""
    valid: torch.Tensor
    option_states: torch.Tensor
    """[Q, K, H] hidden state at each option's marker."""
    header_states: torch.Tensor
    """[Q, H] hidden state at the last token of each question's header."""

    def confidence_logits(self, model: OptionModel) -> torch.Tensor:
        """The confidence head's logit per question [Q]."""
        feats = confidence_features(self.header_states, self.option_states, self.logits, self.valid)
        return model.confidence_head(feats)


def forward_packs(model: OptionModel, packs: Sequence) -> Outputs:
    """One batched forward over packed sequences; questions in pack order, then question order."""
    ids, pos, mask = batch_tensors(packs, dtype=next(model.parameters()).dtype)
    h = model.hidden(ids, pos, mask)
    rows = [(b, marks, head) for b, p in enumerate(packs) for marks, head in zip(p.markers, p.headers)]
    k = max(len(m) for _, m, _ in rows)
    b_idx = torch.zeros(len(rows), k, dtype=torch.long)
    t_idx = torch.zeros(len(rows), k, dtype=torch.long)
    valid = torch.zeros(len(rows), k, dtype=torch.bool)
    for q, (b, marks, _) in enumerate(rows):
        b_idx[q], t_idx[q, : len(marks)], valid[q, : len(marks)] = b, torch.tensor(marks), True
    states = h[b_idx, t_idx]
    headers = h[torch.tensor([b for b, _, _ in rows]), torch.tensor([t for _, _, t in rows])]
    return Outputs(model.option_logits(states), valid, states, headers)


def _cat(outs: Sequence[Outputs]) -> Outputs:
    k = max(o.logits.shape[1] for o in outs)

    def pad(x, value):
        extra = k - x.shape[1]
        return torch.nn.functional.pad(x, (0, 0) * (x.dim() - 2) + (0, extra), value=value) if extra else x

    return Outputs(torch.cat([pad(o.logits, 0.0) for o in outs]), torch.cat([pad(o.valid, False) for o in outs]),
                   torch.cat([pad(o.option_states, 0.0) for o in outs]), torch.cat([o.header_states for o in outs]))


class OptionScorer:
    """A loaded option model with its tokenizer and saved settings."""

    def __init__(self, model: OptionModel, tokenizer, settings: Settings = Settings(), marker_id: int | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.settings = settings
        self.marker = int(tokenizer.eos_token_id if marker_id is None else marker_id)

    @classmethod
    def load(cls, directory: str | Path, **kwargs) -> "OptionScorer":
        """Load a verified clarifylab-option-scorer-v1 directory (hashes checked, no remote code)."""
        model, tokenizer, card = load_option_model(directory, **kwargs)
        return cls(model, tokenizer, card.settings, card.marker_id)

    def prepare(self, state: Any, questions: Mapping[str, Any] | Sequence[OptionQuestion]) -> Encoded:
        """Validate and tokenize a request; refuses with a message naming the question at fault."""
        parsed = list(questions) if _parsed(questions) else parse_questions(questions, self.settings.max_options)
        return encode(self.tokenizer, state, parsed, self.marker, self.settings.max_tokens)

    @torch.no_grad()
    def outputs(self, enc: Encoded, path: str = "packed") -> Outputs:
        """Option logits and states: one packed pass, or one pass per question (the reference)."""
        if path == "packed":
            return forward_packs(self.model, [pack(enc)])
        if path == "per_question":
            return _cat([forward_packs(self.model, [pack(Encoded(enc.state, [q]))]) for q in enc.questions])
        raise ValueError(f"unknown path {path!r}; expected one of {PATHS}")

    @torch.no_grad()
    def per_option_logits(self, enc: Encoded) -> list[torch.Tensor]:
        """Each option alone after the state and its header, plain causal attention: the ground truth."""
        out = []
        for q in enc.questions:
            scores = []
            for opt in q.options:
                ids = torch.tensor([enc.state + q.header + opt])
                h = self.model.body(input_ids=ids, use_cache=False).last_hidden_state[0, -1]
                scores.append(self.model.option_logits(h[None])[0])
            out.append(torch.stack(scores))
        return out

    def probabilities(self, enc: Encoded, out: Outputs) -> list[list[float]]:
        """Per question, the softmax over its declared options of logits / its type's temperature."""
        probs = []
        for q, logits, valid in zip(enc.questions, out.logits, out.valid):
            t = self.settings.temperature.get(q.question.type, 1.0)
            probs.append(torch.softmax(logits[valid].double() / t, -1).tolist())
        return probs

    @torch.no_grad()
    def answer(self, enc: Encoded, path: str = "packed") -> list[dict]:
        """The System One answer of each question, in request order."""
        out = self.outputs(enc, path)
        head = torch.sigmoid(out.confidence_logits(self.model)).tolist()
        answers = []
        for e, probs, conf in zip(enc.questions, self.probabilities(enc, out), head):
            q = e.question
            shaped = SystemOneQuestion(q.name, q.type, q.instructions, list(q.keys), list(q.keys),
                                       list(q.descriptions)).answer(probs)
            shaped["max_p"] = max(probs)
            shaped["confidence"] = conf if self.settings.confidence_mode == "head" else max(probs)
            answers.append(shaped)
        return answers

    def decide(self, state: Any, questions: Sequence[Question]) -> list[Answer]:
        """The letter Decider's interface (core.decision.evaluation.reports): each option's text is its own criteria."""
        typed = [OptionQuestion(f"question {i + 1}", q.kind, q.text, tuple(q.options) if q.kind != "score" else
                                tuple(str(j) for j in range(len(q.options))), tuple(q.options))
                 for i, q in enumerate(questions)]
        enc = self.prepare(state, typed)
        with torch.no_grad():
            probs = self.probabilities(enc, self.outputs(enc))
        return [make_answer(q, p) for q, p in zip(questions, probs)]

    def score(self, state: Any, questions: Mapping[str, Any], path: str = "packed") -> dict:
        """``{"answers": {name: answer}, "usage": {"input_tokens", "output_tokens"}}``."""
        enc = self.prepare(state, questions)
        answers = self.answer(enc, path)
        return {"answers": {e.question.name: a for e, a in zip(enc.questions, answers)},
                "usage": {"input_tokens": enc.n_tokens, "output_tokens": 0}}


def _parsed(questions) -> bool:
    return isinstance(questions, Sequence) and not isinstance(questions, str) and all(
        isinstance(q, OptionQuestion) for q in questions)
