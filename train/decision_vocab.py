"""Give a decision export whole-word tokens for the clarify fields' values and names.

Our 1,024-token BPE was trained on triage tickets, so a cued request's values split into letters
("leadership" is seven tokens, "flexible" six): to answer "What should the attendees be?" the
4-layer body must match a seven-token span in the state against a seven-token option, and from
the shipped warmup it learnt that at about 0.3 accuracy in 400 steps (docs/log.md). Each value
(and each field's noun) becomes one added token that matches whole words only, so other text
keeps its tokens; its embedding starts as the mean of the pieces it replaces. The letter ids and
every other weight are unchanged.

    python -m train.decision_vocab --init checkpoints/decision-warmup --out runs/cue/base
"""

from dataclasses import dataclass, field

import torch
from tokenizers import AddedToken

from core.clarify.cued import noun
from core.clarify.families import FIELDS
from core.decision.export.published import export_decision, load_decider
from core.decision.prompt import letter_token_ids
from train.decision_run import load_model, parse_config


@dataclass(frozen=True)
class VocabConfig:
    init: str = field(default="checkpoints/decision-warmup", metadata={"help": "export to extend"})
    out: str = field(default="runs/cue/base", metadata={"help": "new export directory (must not exist)"})


def field_words() -> list[str]:
    """Every clarify field value and field noun as text, sorted, each once."""
    return sorted({str(v) for f in FIELDS.values() for v in f.values} | {noun(name) for name in FIELDS})


def extend(body, tokenizer, words: list[str]) -> list[str]:
    """Add each word the tokenizer splits as a whole-word token; grow the embeddings; return those added."""
    pieces = {w: tokenizer(w, add_special_tokens=False)["input_ids"] for w in words}
    added = [w for w in words if len(pieces[w]) > 1]
    letters = letter_token_ids(tokenizer)
    tokenizer.add_tokens([AddedToken(w, single_word=True, normalized=False) for w in added])
    old = body.get_input_embeddings().weight.shape[0]
    body.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    weight = body.get_input_embeddings().weight
    with torch.no_grad():
        for w in added:
            weight[tokenizer.convert_tokens_to_ids(w)] = weight[pieces[w]].mean(0)
    if letter_token_ids(tokenizer) != letters or weight.shape[0] != old + len(added):
        raise RuntimeError("extending the vocabulary moved the letter ids or lost rows")
    return added


def main(config: VocabConfig) -> list[str]:
    body, rows, tokenizer = load_model(config.init)
    added = extend(body, tokenizer, field_words())
    export_decision(config.out, body, rows, tokenizer, base_model=f"{config.init} + {len(added)} field-word tokens",
                    training={"stage": "vocab", "init": config.init, "added_tokens": added})
    load_decider(config.out)
    return added


if __name__ == "__main__":
    words = main(parse_config(VocabConfig))
    print(f"added {len(words)} whole-word tokens")
