"""The decision engine: typed questions, the published letter-readout prompt, the Decider, export.

Modules: ``questions`` (Choice/Score/Noul, answers, typed criteria), ``prompt`` (template, seam,
letter tokens), ``readout`` (differentiable option logits, shared with training), ``decider`` (three
exact paths and automatic choice), ``cost`` (path cost model), ``export`` (rlcd-decision-only-v1),
``random_model`` (random Qwen3 bodies and a letter-safe tokenizer for tests and benchmarks).
"""

from core.decision.decider import Decider, Limits, RequestTooLong
from core.decision.prompt import SeamError, check_seam, letter_token_ids, render_prompt, split_prompt
from core.decision.questions import Answer, Choice, Noul, QuestionError, Score
from core.decision.readout import option_logits, option_logprobs

__all__ = [
    "Answer", "Choice", "Decider", "Limits", "Noul", "QuestionError", "RequestTooLong", "Score",
    "SeamError", "check_seam", "letter_token_ids", "option_logits", "option_logprobs", "render_prompt",
    "split_prompt",
]
