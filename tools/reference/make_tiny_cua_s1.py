"""Write the tiny Cua-S1 stand-in checkpoint, its prompt goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_cua_s1.py

tests/fixtures/tiny-cua-s1/ gets a random Qwen3_5ForCausalLM shaped like Qwen3.5-4B scaled down
(8 layers with full attention every 4th, tied embeddings; the real merged checkpoint is the same
class with the LoRA folded into its weights), the tiny Qwen3.5 tokenizer and chat template of
tests/fixtures/qwen-tiny-tokenizer/qwen3_5 (A..Z single tokens), and s1serve.json asking for the
cua-s1-text contract in fp32. Weights are perturbed after init (make_tiny_chat_models.perturb) and
stored as BF16 to keep the files small; the reference runs them upcast to fp32.

Then tools/reference/cua_s1_contract.py over tests/fixtures/tiny-cua-s1/requests.jsonl writes
prompts.jsonl (rendered text and token ids per question: the prompt goldens) and expected.jsonl
(answers with BF16-rounded letter logits, the format `s1serve validate --reference` reads).
"""

from __future__ import annotations

import os
import sys

import torch
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cua_s1_contract import CuaS1Decider  # noqa: E402
from decider_io import question_prompt_lines  # noqa: E402
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_reference_outputs  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-cua-s1")


def main() -> None:
    torch.manual_seed(7)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    model = tiny_decision_qwen3_5(len(AutoTokenizer.from_pretrained(TOKENIZER_DIR)))
    perturb(model, 300)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)
    decision_file = {
        "contract": "cua-s1-text",
        "name": "tiny-cua-s1",
        "aliases": ["tiny-cua-s1-4b-0.2"],
        "description": "Random tiny Qwen3.5 stand-in for Cua-S1 4B 0.2 text (tests)",
        "precision": "fp32",
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    decider = CuaS1Decider(OUT)
    write_reference_outputs(OUT, decider.decide,
                            lambda number, request: question_prompt_lines(number, request, decider.prompt))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
