"""Write the tiny Open-Jev stand-in checkpoint, its export file, prompt goldens and reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_open_jev.py

tests/fixtures/tiny-open-jev/ gets a random Qwen3_5ForCausalLM shaped like the Qwen3.5/3.8 hybrid scaled
down (8 layers, full attention every 4th; the real exports are the same class with the LoRA merged), the
tiny Qwen3.5 tokenizer and chat template of tests/fixtures/qwen-tiny-tokenizer/qwen3_5, an
open_jev_export.json written the way the reference's recipe/open_jev/export_merged.py writes it (format
open-jev-text-merged/1; chat prefix/suffix split from the chat template around a marker user message
with the generation prompt and thinking off; a random scalar head; Open-Jev-27B-v1.1's temperature; an
unpinned model_id, so s1serve.json names the model) and s1serve.json asking for the open-jev contract in
fp32. Weights are perturbed after init (make_tiny_chat_models.perturb) and stored as BF16 to keep the
files small; the reference runs them upcast to fp32. max_length is 512 so over-length refusals are cheap
to test.

Then tools/reference/open_jev_contract.py over tests/fixtures/tiny-open-jev/requests.jsonl writes
prompts.jsonl (sequence texts and token ids per question: the prompt goldens) and expected.jsonl
(answers from every candidate run on its own, the format `s1serve validate --reference` reads).
"""

from __future__ import annotations

import json
import os
import sys

import torch
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decider_io import question_prompt_lines  # noqa: E402
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_reference_outputs  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402
from open_jev_contract import OpenJevDecider  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-open-jev")
TEMPERATURE = 2.5343690298472983  # Open-Jev-27B-v1.1's calibration (models.md §4.9)
MAX_LENGTH = 512


def chat_wrap(tokenizer) -> tuple[str, str]:
    marker = "\x00OPEN_JEV_MARKER\x00"
    chat = tokenizer.apply_chat_template([{"role": "user", "content": marker}], tokenize=False,
                                         add_generation_prompt=True, enable_thinking=False)
    if chat.count(marker) != 1:
        raise ValueError("expected a single-user text chat template")
    prefix, suffix = chat.split(marker)
    return prefix, suffix


def main() -> None:
    torch.manual_seed(11)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer))
    perturb(model, 611)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)

    prefix, suffix = chat_wrap(tokenizer)
    gen = torch.Generator().manual_seed(613)
    head_weight = (torch.randn(model.config.hidden_size, generator=gen) * 2.5).float()
    head_bias = float((torch.randn(1, generator=gen) * 0.3).float().item())
    export = {
        "format": "open-jev-text-merged/1",
        "model_id": "s1serve/tiny-qwen3_5-open-jev-stand-in", "base_revision": "random-seed-11",
        "checkpoint_revision": "random-seed-613", "temperature": TEMPERATURE,
        "max_length": MAX_LENGTH, "chat_prefix": prefix, "chat_suffix": suffix,
        "head_weight": head_weight.tolist(), "head_bias": head_bias,
    }
    with open(os.path.join(OUT, "open_jev_export.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(export, allow_nan=False) + "\n")
    decision_file = {
        "contract": "open-jev",
        "name": "tiny-open-jev",
        "aliases": ["open-jev", "jev-latest", "tiny-open-jev-27b-v1.1"],
        "description": "Random tiny Qwen3.5 stand-in for Open-Jev (tests)",
        "precision": "fp32",
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    decider = OpenJevDecider(OUT)
    write_reference_outputs(OUT, decider.decide,
                            lambda number, request: question_prompt_lines(number, request, decider.sequences, "texts"))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
