"""Our decision folders as transformers decision models (``AutoModelForDecision``).

Importing this module registers ``LetterReadoutForDecision`` for the body types our exports use,
so ``transformers.pipeline("decision", model=EXPORT_DIR)`` and ``transformers serve`` answer System
One requests with our prompt and letter readout: loading goes through our hash-verified
``load_decider``, a request is tokenized by ``Decider.tokenize`` (one prompt per question, read at
its last token, like the reference path), and the head is our ``readout``. The published layout
stays as it is: the export's ``decision.json`` card is the "head config" transformers reads next
to the weights. A pooled-readout folder (``core.decision.pooled``: ``pooled.json``, the base's
config and tokenizer) loads as ``PooledReadoutForDecision``, whose inputs and logits are its
decider's. Any other folder of those body types loads as the causal LM it is, as before.

    import core.decision.auto_model  # registers
    transformers.pipeline("decision", model="checkpoints/decision-rlcd")(request)
"""

import copy
import json
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, LlamaConfig, PreTrainedModel, Qwen3Config
from transformers.decision import DecisionConfig
from transformers.decision.modeling_utils import DecisionMixin
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.auto.modeling_auto import MODEL_FOR_DECISION_MAPPING
from transformers.utils import cached_file

from core.decision import pooled, system_one
from core.decision.export import adapter
from core.decision.export.published import CARD_FILE, FORMAT, load_decider
from core.decision.questions import render_state
from core.decision.readout import readout
from core.decision.rotation import merge_readings
from core.models.loader import causal_lm

BODY_CONFIGS = (Qwen3Config, LlamaConfig)
"""Body types of our exports (the tiny arms are Qwen3 bodies, the SmolLM2 adapter arms Llama ones);
each gets the letter readout registered."""
FORMATS = (FORMAT, adapter.FORMAT)


def read_export_card(path: str | Path, **hub_kwargs) -> dict | None:
    """The export's decision.json when ``path`` is one of our exports (``FORMATS``), else None."""
    found = cached_file(str(path), CARD_FILE, _raise_exceptions_for_missing_entries=False, **hub_kwargs)
    if found is None:
        return None
    try:
        card = json.loads(Path(found).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return card if isinstance(card, dict) and card.get("format") in FORMATS else None


def _hub_kwargs(kwargs: dict) -> dict:
    return {k: kwargs[k] for k in ("cache_dir", "local_files_only", "revision", "token") if k in kwargs}


def _pooled_card(path: str, **hub_kwargs) -> str | None:
    """The pooled readout's card file when ``path`` is a pooled-readout folder, else None."""
    return cached_file(path, pooled.CARD_FILE, _raise_exceptions_for_missing_entries=False, **hub_kwargs)


def load_export(folder: str | Path):
    """The Decider of either export format: the published layout, or an adapter over a real base."""
    return adapter.load_adapter_decider(folder) if adapter.is_adapter_arm(folder) else load_decider(folder)


def parsed_request(request: dict[str, Any] | str) -> tuple[Any, list, list]:
    """A System One request (dict or JSON) as its state, transformers' parsed questions and our primitives."""
    if isinstance(request, str):
        request = json.loads(request)
    if not isinstance(request, dict) or "questions" not in request or "state" not in request:
        raise ValueError('A request is {"state": ..., "questions": {name: question, ...}}, as a dict or its JSON.')
    if request.get("assets"):
        raise ValueError("Images need a model whose processor handles them.")
    parsed = system_one.parse(request["questions"])
    return request["state"], parsed, [system_one.from_parsed(q).primitive for q in parsed]


class LetterDecisionConfig(DecisionConfig):
    """transformers' decision config whose inputs are our prompt, tokenized by our Decider."""

    def prepare_inputs(self, request: dict[str, Any] | str, processor) -> list[tuple[dict, list]]:
        """One prompt per question: the Decider's prefix + that question's suffix, read at the end."""
        state, parsed, primitives = parsed_request(request)
        req = self._decider.tokenize(state, primitives)
        soften = self._decider.temperature
        t = torch.tensor([soften(req.prefix) if soften is not None else 1.0])  # the state's, shared by its questions
        readings = req.readings or [(i, list(range(n))) for i, n in enumerate(req.n_options)]
        prompts = []
        for i, q in enumerate(parsed):  # a question read in several orders carries them all (core.decision.rotation)
            mine = [(torch.tensor([req.prefix + req.suffixes[k]]), order) for k, (j, order) in enumerate(readings) if j == i]
            ids = mine[0][0]
            inputs = {"input_ids": ids, "marks": torch.tensor([ids.shape[1]]), "temperature": t}
            prompts.append(({**inputs, "readings": mine} if len(mine) > 1 else inputs, [q]))
        return prompts


class LetterReadoutForDecision(DecisionMixin, PreTrainedModel):
    """Our Decider's body and 26 letter rows as a decision head: option logits at each mark."""

    config_class = Qwen3Config
    base_model_prefix = "model"
    _supports_sdpa = _supports_flash_attn = _supports_flex_attn = True  # the body's own attention runs

    def __init__(self, config, decider=None):
        super().__init__(config)
        self.model = torch.nn.Identity()
        self.register_buffer("letter_rows", torch.zeros(26, config.hidden_size), persistent=False)
        self.post_init()
        if decider is not None:  # after post_init, whose weight initialisation must never reach a loaded
            self.model = decider.body  # body (an adapter's LoRA layers, or a base other models share)
            self.letter_rows = decider.rows
        self.decider = decider

    @classmethod
    def checkpoint_config(cls, pretrained_model_name_or_path, **kwargs):
        """(body config, decision config) for our folders, (None, None) for any other: how ``transformers serve``
        (5.25 on) tells which registered decision model a checkpoint is for."""
        hub, name = _hub_kwargs(kwargs), str(pretrained_model_name_or_path)
        if read_export_card(name, **hub) is None and _pooled_card(name, **hub) is None:
            return None, None
        return AutoConfig.from_pretrained(name, **hub), DecisionConfig()

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, config=None, **kwargs):
        """Our export through ``load_decider``; a pooled-readout folder as ``PooledReadoutForDecision``
        (one class is registered per body type, so this one dispatches); any other folder as its causal LM."""
        hub, name = _hub_kwargs(kwargs), str(pretrained_model_name_or_path)
        if (pooled_card := _pooled_card(name, **hub)) is not None:
            decider = pooled.load_pooled(Path(pooled_card).parent)
            return _as_decision_model(PooledReadoutForDecision, decider, decider.reader.lower.config,
                                      PooledDecisionConfig(), name)
        if read_export_card(pretrained_model_name_or_path, **hub) is None:
            return causal_lm(pretrained_model_name_or_path, *args, config=config, **kwargs)
        decider = load_export(Path(cached_file(name, CARD_FILE, **hub)).parent)
        return _as_decision_model(cls, decider, decider.body.config, LetterDecisionConfig(), name)

    def forward(self, input_ids, marks, num_options, question_type_ids=None, return_dict=None, temperature=None,
                readings=None, **kwargs):
        """Option logits of every question of one prompt, concatenated (``decide`` splits them); divided by the
        state's ``temperature`` when the arm softens (``core.decision.softening``). A question read in several
        orders (``readings``: each order's ids and order) gets the log of its readings' merged probabilities."""
        n = num_options[0].tolist()
        if readings:
            probs = torch.cat([self.forward(ids, torch.tensor([ids.shape[1]]), num_options, temperature=temperature)
                               .softmax(-1)[None] for ids, _ in readings])
            return option_scores(merge_readings(probs, [order for _, order in readings]).log(), return_dict)
        hidden = self.model(input_ids=input_ids, use_cache=False).last_hidden_state[0]
        logits = readout(hidden[marks[0] - 1], self.letter_rows, n)
        if temperature is not None:
            logits = logits / temperature.reshape(-1)[0]
        return option_scores(torch.cat([logits[i, :k] for i, k in enumerate(n)]), return_dict)


class PooledDecisionConfig(DecisionConfig):
    """transformers' decision config of a pooled readout: one input per request, the state's ids (read
    once, shared by every question) with each option's states, read by the decider (and kept)."""

    def prepare_inputs(self, request: dict[str, Any] | str, processor) -> list[tuple[dict, list]]:
        state, parsed, primitives = parsed_request(request)
        ids = self._decider.state_ids(state, primitives)
        options, mask = self._decider.option_states(primitives, render_state(state))
        inputs = {"input_ids": torch.tensor([ids]), "marks": torch.tensor([len(ids)]), "options": options,
                  "option_mask": mask}
        return [(inputs, parsed)]


class PooledReadoutForDecision(DecisionMixin, PreTrainedModel):
    """``core.decision.pooled``'s decider as a decision model: its head's option logits for one state."""

    config_class = LlamaConfig
    base_model_prefix = "model"
    _supports_sdpa = _supports_flash_attn = _supports_flex_attn = True  # the frozen base's own attention runs

    def __init__(self, config, decider=None):
        super().__init__(config)
        self.model, self.head = torch.nn.Identity(), torch.nn.Identity()
        self.post_init()
        if decider is not None:  # after post_init, whose initialisation must never reach the loaded base or head
            self.model, self.head = decider.reader.lower, decider.head
        self.decider = decider

    def forward(self, input_ids, marks, num_options, options, option_mask, question_type_ids=None, return_dict=None,
                **kwargs):
        """Every question's option logits, concatenated (``decide`` splits them)."""
        logits = self.decider.logits(input_ids[0].tolist(), options, option_mask)
        return option_scores(torch.cat([logits[i, :k] for i, k in enumerate(num_options[0].tolist())]), return_dict)


def option_scores(logits: torch.Tensor, return_dict: bool | None):
    """What ``decide`` reads: transformers >= 5.25 asks for ``return_dict`` and reads ``.logits``; 5.24 and
    earlier split the tensor itself."""
    return SequenceClassifierOutput(logits=logits) if return_dict else logits


def _as_decision_model(cls, decider, body_config, decision_config: DecisionConfig, name: str):
    """``cls`` over ``decider`` (a copy of its body's config), with the decision config its inputs come from."""
    model = cls(copy.deepcopy(body_config), decider).eval()
    decision_config._decider = decider  # read by prepare_inputs; not a saved setting
    model.decision_config = decision_config
    model.name_or_path = model.config.name_or_path = name
    return model


def register() -> None:
    """Register the letter readout for each body type (idempotent)."""
    for config_class in BODY_CONFIGS:
        MODEL_FOR_DECISION_MAPPING.register(config_class, LetterReadoutForDecision, exist_ok=True)


register()
