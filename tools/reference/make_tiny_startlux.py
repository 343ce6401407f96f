"""Write the tiny StartLux-Decision stand-in checkpoint, its prompt goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_startlux.py

tests/fixtures/tiny-startlux/ gets a random Qwen3_5ForCausalLM shaped like Qwen3.5-4B scaled down (8
layers with full attention every 4th, tied embeddings; the real checkpoint is the VL class, whose
decoder and output embedding are all the contract reads), the tiny Qwen3.5 tokenizer and chat
template of tests/fixtures/qwen-tiny-tokenizer/qwen3_5 (A..Z single tokens), a decision_config.json
in the real checkpoint's format (letter_token_ids from the tokenizer, made-up per-type temperatures,
the reference's wide_choice settings) and s1serve.json asking for the startlux-instant contract in
fp32. Weights are perturbed after init (make_tiny_chat_models.perturb) and stored as BF16 to keep the
files small; the reference runs them upcast to fp32.

Then tools/reference/startlux_contract.py over tests/fixtures/tiny-startlux/requests.jsonl writes
prompts.jsonl (rendered text and token ids of every first-round prompt: the prompt goldens) and
expected.jsonl (answers, the format `s1serve validate --reference` reads).
"""

from __future__ import annotations

import os
import sys

import torch
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_reference_outputs  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402
from startlux_contract import LETTERS, StartLuxDecider  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-startlux")


def main() -> None:
    torch.manual_seed(11)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer), 8192)
    perturb(model, 500)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)
    decision_config = {
        "letter_token_ids": [tokenizer.convert_tokens_to_ids(letter) for letter in LETTERS],
        "temperature_by_type": {"choice": 0.35, "noul": 0.6, "score": 0.45},
        "wide_choice": {"group": 25, "keep": 3, "residual": 0.001},
        "release_date": "2026-10-01",
    }
    write_json(os.path.join(OUT, "decision_config.json"), decision_config)
    decision_file = {
        "contract": "startlux-instant",
        "name": "tiny-startlux",
        "aliases": ["tiny-startlux-decision-v1.1-4b-instant"],
        "description": "Random tiny Qwen3.5 stand-in for StartLux-Decision v1.1 4B Instant (tests)",
        "precision": "fp32",
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    decider = StartLuxDecider(OUT)
    write_reference_outputs(OUT, decider.decide, decider.prompt_lines)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
