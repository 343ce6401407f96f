"""Write the tiny Valen stand-in checkpoint, its head, prompt goldens and reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_valen.py

tests/fixtures/tiny-valen/ gets a random Qwen3_5ForCausalLM shaped like the Qwen3.5 hybrid scaled down
(make_tiny_chat_models.tiny_decision_qwen3_5: the real checkpoint is Qwen3.5-2B with Valen's LoRA merged),
the tiny Qwen3.5 tokenizer and chat template of tests/fixtures/qwen-tiny-tokenizer/qwen3_5 (its
tokenizer_config.json given extra_special_tokens ["<|im_start|>"], so the reserved-token check reads the
list Qwen's configs carry), valen_head.safetensors (Valen's bilinear DecisionHead at its real
projection_dim 256: head.decision.weight and head.candidate.weight [256, hidden], float32, initialised
as nn.Linear does, scaled up so answers are not uniform) and s1serve.json asking for the valen contract
in fp32. Weights are perturbed after init and stored as BF16 to keep the files small; the reference runs
them upcast to fp32.

Then tools/reference/valen_contract.py over tests/fixtures/tiny-valen/requests.jsonl writes prompts.jsonl
(the chat-rendered base, the suffix pieces, token ids, endpoints and Decision position per question: the
prompt goldens) and expected.jsonl (answers with every question run on its own, the format
`s1serve validate --reference` reads).
"""

from __future__ import annotations

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_reference_outputs  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402
from valen_contract import ValenDecider  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-valen")
PROJECTION_DIM = 256


def main() -> None:
    torch.manual_seed(21)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer))
    perturb(model, 2101)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)
    config_path = os.path.join(OUT, "tokenizer_config.json")
    with open(config_path, encoding="utf-8") as f:
        tokenizer_config = json.load(f)
    tokenizer_config["extra_special_tokens"] = ["<|im_start|>"]
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_config, f, indent=2, ensure_ascii=False)
        f.write("\n")

    hidden = model.config.hidden_size
    decision = torch.nn.Linear(hidden, PROJECTION_DIM, bias=False)
    candidate = torch.nn.Linear(hidden, PROJECTION_DIM, bias=False)
    with torch.no_grad():
        head = {"head.decision.weight": (decision.weight * 1.5).float().contiguous(),
                "head.candidate.weight": (candidate.weight * 1.5).float().contiguous()}
    save_file(head, os.path.join(OUT, "valen_head.safetensors"))
    write_json(os.path.join(OUT, "s1serve.json"), {
        "contract": "valen",
        "name": "tiny-valen",
        "aliases": ["valen-preview-0923"],
        "description": "Random tiny Qwen3.5 stand-in for Valen-Preview-0923 (tests)",
        "precision": "fp32",
    })

    decider = ValenDecider(OUT)
    assert "<|im_start|>" in decider.reserved
    write_reference_outputs(OUT, decider.decide, decider.prompts)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
