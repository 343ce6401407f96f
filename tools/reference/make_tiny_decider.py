"""Write the tiny Decider-2B stand-in checkpoint, its row goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_decider.py

tests/fixtures/tiny-decider/ gets a random Qwen3_5ForCausalLM laid out as Decider-2B v11 is (the
Qwen3.5 hybrid, full attention every 4th layer, tied embeddings, one model.safetensors, no chat
template) scaled down to 8 layers of width 32, and a tokenizer in which every label is one token:
the tiny Qwen3.5 tokenizer of tests/fixtures/qwen-tiny-tokenizer/qwen3_5 plus merges that make
two-letter upper-case strings single tokens. As in the real tokenizer some combinations stay two
tokens, chosen so that the reference's label rule (A..Z, then the two-letter strings that are one
token, the first 255) ends at JT like Decider-2B's. Those 255 ids go to s1serve.json
label_token_ids, since the stand-in's ids differ from the real tokenizer's that s1serve pins.
Weights are perturbed after init (make_tiny_chat_models.perturb) and stored as BF16 to keep the
files small; the reference runs them upcast to fp32.

Then tools/reference/decider_contract.py over tests/fixtures/tiny-decider/requests.jsonl writes
prompts.jsonl (every row's text and token ids: the prompt goldens) and expected.jsonl (answers with
BF16-rounded label logits, the format `s1serve validate --reference` reads).
"""

from __future__ import annotations

import json
import os
import random
import string
import sys

import torch
from tokenizers import Tokenizer
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decider_contract import Decider, label_table  # noqa: E402
from fixture_files import read_jsonl, remove_files, save_checkpoint, write_json, write_jsonl  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-decider")
SKIPPED = 25  # two-letter strings up to JT left as two tokens: 26 + (254 - 25) = 255 labels


def write_tokenizer() -> None:
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    vocab = tokenizer["model"]["vocab"]
    merges = tokenizer["model"]["merges"]
    upper = string.ascii_uppercase
    pairs = [a + b for a in upper for b in upper]
    through_jt = pairs[:pairs.index("JT") + 1]
    candidates = [p for p in through_jt[:-1] if p not in vocab]  # JT itself stays the last label
    skipped = set(random.Random(11).sample(candidates, SKIPPED))
    # New tokens continue the BPE vocabulary and the special tokens move up behind them: Transformers
    # places a tokenizer's special tokens after its vocabulary, so the two must stay contiguous.
    base = next_id = len(vocab)
    for pair in pairs:
        if pair in vocab or pair in skipped:
            continue
        vocab[pair] = next_id
        next_id += 1
        merges.append([pair[0], pair[1]])
    for token in tokenizer["added_tokens"]:
        token["id"] += next_id - base
    with open(os.path.join(OUT, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(TOKENIZER_DIR, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config.pop("chat_template", None)  # Decider prompts are plain text
    config["added_tokens_decoder"] = {str(int(i) + next_id - base): token
                                      for i, token in config["added_tokens_decoder"].items()}
    with open(os.path.join(OUT, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")


def main() -> None:
    torch.manual_seed(11)
    os.makedirs(OUT, exist_ok=True)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    write_tokenizer()
    tokenizer = AutoTokenizer.from_pretrained(OUT)
    sample = "Context:\nThe door <|im_start|> AB JT ZZ\n(A) x"
    assert tokenizer.encode(sample, add_special_tokens=False) == \
        Tokenizer.from_file(os.path.join(OUT, "tokenizer.json")).encode(sample, add_special_tokens=False).ids
    names, ids = label_table(tokenizer)
    assert names[-1] == "JT", names[-1]
    model = tiny_decision_qwen3_5(len(tokenizer))
    perturb(model, 300)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    decision_file = {
        "contract": "decider-2b",
        "name": "tiny-decider",
        "aliases": ["tiny-decider-2b"],
        "description": "Random tiny Qwen3.5 stand-in for Decider-2B v11 (tests)",
        "precision": "fp32",
        "label_token_ids": ids,
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    decider = Decider(OUT)
    requests = read_jsonl(os.path.join(OUT, "requests.jsonl"))
    with open(os.path.join(OUT, "prompts.jsonl"), "w", encoding="utf-8") as f:
        for number, request in enumerate(requests):
            for row, (key, rendered, row_ids) in enumerate(decider.rows(request)):
                f.write(json.dumps({"request": number, "question": key, "row": row, "text": rendered,
                                    "ids": row_ids}, ensure_ascii=False) + "\n")
    write_jsonl(os.path.join(OUT, "expected.jsonl"), (decider.decide(request) for request in requests))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
