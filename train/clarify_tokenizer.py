"""A small byte-level BPE tokenizer for the clarify policy, with a Qwen3-layout tool chat template.

Trained with the ``tokenizers`` library on our own text: rendered protocol prompts, questions,
answers, tool results and plans from scripted demonstrations. The chat template (written here)
lays tools out as Qwen3 does: the system block lists the tool schemas inside ``<tools></tools>``,
an assistant call is a ``<tool_call>`` JSON block, and tool results come back inside a user turn
wrapped in ``<tool_response>``. It has no thinking block (``enable_thinking`` is accepted and
ignored), so every rendering is a prefix of the next one: multi-turn training needs that.

    python -m train.clarify_tokenizer --out /tmp/clarify-tok   # build and save alone
"""

import argparse
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast
from core.decision.export.published import portable_tokenizer_config

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]
"""Control tokens: dropped by ``decode(..., skip_special_tokens=True)``."""
TAG_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>"]
"""Single tokens that stay visible in decoded text (the parser reads them), as in Qwen3."""

TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\n</tool_call>'
)

def domain_tokens() -> list[str]:
    """Every field name and vocabulary value of the five families, each as one token.

    A value then reads as the same single token in the user's answer ("Budget around <$100-500>.")
    and in the plan JSON, so writing a plan is copying a token, which a tiny model learns fast;
    without them BPE merges the value with whatever text surrounds it in each place.
    """
    from core.clarify.families import FIELDS

    names = list(FIELDS) + [str(v) for f in FIELDS.values() for v in f.values]
    return sorted(set(names), key=lambda t: (-len(t), t))


CHAT_TEMPLATE = (
    "{%- set ns = namespace(first=0) -%}"
    "{%- if messages and messages[0].role == 'system' -%}{%- set ns.first = 1 -%}{%- endif -%}"
    # system block: the system message, then the tool list, as in Qwen3
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if ns.first -%}{{- messages[0].content + '\\n\\n' -}}{%- endif -%}"
    "{{- " + repr(TOOLS_HEADER) + " -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- " + repr(TOOLS_FOOTER) + " + '<|im_end|>\\n' -}}"
    "{%- elif ns.first -%}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages[ns.first:] -%}"
    "{%- set prev = messages[ns.first + loop.index0 - 1].role if loop.index0 + ns.first > 0 else '' -%}"
    "{%- if message.role == 'user' or message.role == 'system' -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}"
    "{%- elif message.role == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' + (message.content or '') -}}"
    "{%- for call in (message.tool_calls or []) -%}"
    "{%- set call = call.function if call.function is defined else call -%}"
    "{%- if message.content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' -}}"
    "{{- (call.arguments if call.arguments is string else (call.arguments | tojson)) + '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- elif message.role == 'tool' -%}"
    "{%- if prev != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' -}}"
    "{%- if loop.last or messages[ns.first + loop.index0 + 1].role != 'tool' -%}"
    "{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096) -> PreTrainedTokenizerFast:
    """Byte-level BPE on ``texts`` (any byte string stays encodable), wrapped for transformers.

    No pre-tokenizer split: merges may cross spaces and punctuation, so the fixed protocol text
    (system block, JSON keys of tool results) collapses into a few long tokens. An episode then
    costs about 150 tokens instead of about 900, which is what makes CPU training affordable.
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    extra = TAG_TOKENS + [t for t in domain_tokens() if t not in TAG_TOKENS]
    trainer = trainers.BpeTrainer(
        vocab_size=max(300, vocab_size - len(extra)),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=None, eos_token=IM_END, pad_token=PAD,
        additional_special_tokens=[IM_START], padding_side="left",
    )
    fast.add_tokens(extra)  # unsplittable but not special: decoded text keeps them
    fast.chat_template = CHAT_TEMPLATE
    return fast


def corpus(demos: int = 400, seed: int = 0) -> list[str]:
    """Our own text: full rendered demonstration conversations, plus the template's fixed parts."""
    import random

    from core.clarify.agent import TOOL_SCHEMAS, episode_messages
    from core.clarify.scenarios import TRAIN_SEEDS, generate_scenario
    from train.clarify_demos import DemoStyle, play_demo
    from transformers.utils.chat_template_utils import render_jinja_template

    rng = random.Random(seed)
    seeds = rng.sample(list(TRAIN_SEEDS), demos)
    texts = [TOOLS_HEADER + TOOLS_FOOTER]
    for s in seeds:
        scenario = generate_scenario(s, rng.choice(["easy", "medium", "hard"]))
        episode = play_demo(scenario, "v2", DemoStyle(), rng)
        rendered, _ = render_jinja_template([episode_messages(scenario, episode.turns, final_result=False)], tools=TOOL_SCHEMAS,
                                            chat_template=CHAT_TEMPLATE)
        texts.append(rendered[0])
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tok = train_tokenizer(corpus(seed=args.seed), args.vocab_size)
    tok.save_pretrained(args.out)
    portable_tokenizer_config(Path(args.out) / "tokenizer_config.json")  # transformers 4.57 reads it too
    print(f"saved {len(tok)} tokens to {args.out}")


if __name__ == "__main__":
    main()
