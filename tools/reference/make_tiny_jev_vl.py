"""Write the tiny JEV-27B-VL stand-in: checkpoint, export file, label rows, prompt goldens and answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_jev_vl.py

tests/fixtures/tiny-jev-vl/ gets a random Qwen3_5ForCausalLM shaped like the Qwen3.5/3.8 hybrid scaled
down (make_tiny_chat_models.tiny_decision_qwen3_5; the real export is the 27B language model with the
LoRA merged), the tiny Qwen3.5 tokenizer of tests/fixtures/qwen-tiny-tokenizer/qwen3_5, and the two files
system1-omni's recipe/jev_vl/export_merged.py writes beside the weights:

- label_head.safetensors: "rows" float32 [n, hidden] and "ids" int64 [n] for the union of the 24
  verbalizer slots and the single-token option labels, here the stand-in's own LM-head rows plus noise
  (the real rows are the merged lm_head's);
- jev_vl_export.json (format jev-vl-text-merged/1): the option labels found by serve_decide.py's scan
  (A-Z then AA-ZZ, each a single token that survives in "x\\n<label>) y"; the tiny vocabulary has 56, the
  real one 256), the 24 verbalizer ids (noul " false"/" true", score "0"-"5", choice the first 16 labels),
  random slot biases, per-kind temperatures and max_length 512 so over-length refusals are cheap.

s1serve.json asks for the jev-vl contract in fp32. Then tools/reference/jev_vl_contract.py over
requests.jsonl writes prompts.jsonl (prompt texts and token ids per question) and expected.jsonl.
"""

from __future__ import annotations

import json
import os
import string
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decider_io import question_prompt_lines  # noqa: E402
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_reference_outputs  # noqa: E402
from jev_vl_contract import JevVlDecider  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-jev-vl")
MAX_OPTIONS = 256
MAX_LENGTH = 512


def single_token_labels(tokenizer, context: str) -> list[tuple[str, int]]:
    """serve_decide.py's option-label scan, as export_merged.py reproduces it."""
    out = []
    for label in list(string.ascii_uppercase) + [a + b for a in string.ascii_uppercase for b in string.ascii_uppercase]:
        ids = tokenizer.encode(label, add_special_tokens=False)
        if len(ids) == 1 and ids[0] in tokenizer.encode(context.format(label), add_special_tokens=False):
            out.append((label, ids[0]))
        if len(out) == MAX_OPTIONS:
            break
    return out


def single(tokenizer, text: str) -> int:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert len(ids) == 1, (text, ids)
    return ids[0]


def main() -> None:
    torch.manual_seed(27)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer))
    perturb(model, 2701)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)

    labels = single_token_labels(tokenizer, "x\n{}) y")
    verbalizer = ([single(tokenizer, " false"), single(tokenizer, " true")] +
                  [single(tokenizer, str(i)) for i in range(6)] + [t for _, t in labels[:16]])
    gen = torch.Generator().manual_seed(2703)
    bias = (torch.randn(24, generator=gen) * 0.5).tolist()
    head_ids = list(dict.fromkeys(verbalizer + [t for _, t in labels]))
    lm_rows = model.get_output_embeddings().weight.detach().float()
    rows = lm_rows[torch.tensor(head_ids)] + torch.randn(len(head_ids), lm_rows.shape[1], generator=gen) * 0.05
    save_file({"rows": rows.contiguous(), "ids": torch.tensor(head_ids, dtype=torch.int64)},
              os.path.join(OUT, "label_head.safetensors"))
    export = {
        "format": "jev-vl-text-merged/1", "model_id": "autotrust/JEV-27B-VL", "protocol": "jev27-bare-v1",
        "hf_revision": None,
        "pins": {name: "0" * 64 for name in ("model_index_sha256", "adapter_config_sha256", "adapter_model_sha256",
                                             "decision_head_sha256", "calibration_sha256")},
        "merge": {"lora_scale": 2.0, "delta_dtype": "float32", "backbone_dtype": "bfloat16"},
        "temperatures": {"noul": 1.3, "score": 0.8, "choice": 1.7},
        "verbalizer_ids": verbalizer, "verbalizer_bias": bias,
        "slots": {"ranges": {"noul": [0, 2], "score": [2, 8], "choice": [8, 24]}},
        "labels": [label for label, _ in labels], "label_ids": [t for _, t in labels],
        "label_head": {"file": "label_head.safetensors", "ids": head_ids, "dtype": "float32"},
        "max_length": MAX_LENGTH,
    }
    with open(os.path.join(OUT, "jev_vl_export.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(export, ensure_ascii=False) + "\n")
    write_json(os.path.join(OUT, "s1serve.json"), {
        "contract": "jev-vl",
        "name": "tiny-jev-vl",
        "aliases": ["jev-27b-vl-stand-in"],
        "description": "Random tiny Qwen3.5 stand-in for autotrust/JEV-27B-VL (tests)",
        "precision": "fp32",
    })

    decider = JevVlDecider(OUT)
    write_reference_outputs(OUT, decider.decide,
                            lambda number, request: question_prompt_lines(number, request, decider.prompt))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
