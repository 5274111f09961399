#!/usr/bin/env python3
"""Makes the tiny HuggingFace-style model directory the real-vLLM tests, demo and benchmarks serve.

    .venv-vllm/bin/python scripts/make-tiny-model.py OUT_DIR

Offline and deterministic: the same script gives byte-identical files on every run (no
download, no clock, seeded corpus). The directory holds a `config.json` for a small
LlamaForCausalLM (hidden 256, 4 layers, float32) and a byte-level BPE tokenizer trained here
with the `tokenizers` library; vLLM serves it with `--load-format dummy` (random weights), so
no weight file exists. Why this size: a 3,000-token cold prefill takes well over a second on
one core, so prefix-cache hits are visible in TTFT, while startup and memory stay small.

The training corpus is generated from a fixed seed: English-like sentences from a fixed word
list plus the shape the benchmarks send (test/kit/synthetic-text.ts: three lowercase
letters and a space per word), so both tokenize compactly.
"""
import hashlib
import json
import os
import random
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 8192
SEED = 20261201
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>"]
# One turn per message: `<|role|>\n{content}<|end|>\n`; the generation prompt opens an
# assistant turn. Tool calls are rendered as JSON text inside the assistant turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% if message.get('tool_calls') %}{% for call in message['tool_calls'] %}"
    "{{ '\n<tool_call>' + call['function']['name'] + ' ' + (call['function']['arguments'] if call['function']['arguments'] is string else call['function']['arguments'] | tojson) + '</tool_call>' }}"
    "{% endfor %}{% endif %}"
    "{{ '<|end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
WORDS = (
    "the of and to in is that for it as with was on be by this are or at from which an have not "
    "but they all one can were their has there more if will would other so when what about time "
    "system user assistant tool call result request response model cache prefix token block engine "
    "router prompt context session question answer data value error status function argument list "
    "file path name type number string return query search read write open close start stop load "
    "memory queue latency first last next previous step turn message content reply summary report "
    "please explain describe show find check compare update create delete choose keep help thanks"
).split()


def corpus(rng: random.Random):
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(4000):
        n = rng.randint(8, 40)
        yield " ".join(rng.choice(WORDS) for _ in range(n)) + rng.choice([".", "?", "!", ":"])
    for _ in range(6000):
        n = rng.randint(16, 64)
        yield " ".join("".join(rng.choice(letters) for _ in range(3)) for _ in range(n)) + " "
    for _ in range(500):
        yield json.dumps({"name": rng.choice(WORDS), "arguments": {rng.choice(WORDS): rng.randint(0, 9999)}})


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make-tiny-model.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus(rng)), trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)])
    tok.save(os.path.join(out, "tokenizer.json"))
    vocab = tok.get_vocab_size()

    write_json(out, "tokenizer_config.json", {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "add_bos_token": True,
        "add_eos_token": False,
        "model_max_length": 16384,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    })
    write_json(out, "special_tokens_map.json", {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    write_json(out, "config.json", {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "max_position_embeddings": 16384,
        "vocab_size": vocab,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": bos,
        "eos_token_id": tok.token_to_id("</s>"),
        "pad_token_id": tok.token_to_id("<pad>"),
    })
    write_json(out, "generation_config.json", {"bos_token_id": bos, "eos_token_id": tok.token_to_id("</s>")})
    digest = hashlib.sha256()
    for name in sorted(os.listdir(out)):
        if name.endswith(".json"):
            with open(os.path.join(out, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    print(json.dumps({"event": "model", "dir": out, "vocab": vocab, "sha256": digest.hexdigest()}))


def write_json(out: str, name: str, doc: dict) -> None:
    with open(os.path.join(out, name), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
