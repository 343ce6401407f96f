"""Write the tiny LAYA stand-in checkpoint and its reference outputs.

    /work/.venv-ref/bin/pip install --no-deps laya==0.3.20   # the pinned reference package
    /work/.venv-ref/bin/python tools/reference/make_tiny_laya.py
    /work/.venv-ref/bin/python tools/reference/make_tiny_laya.py --large DIR   # bench checkpoint, 842 MB

tests/fixtures/tiny-laya/ gets a checkpoint laid out as convaiinnovations/laya is (rl_agent_config.json,
model.safetensors, encoder/config.json, tokenizer/), scaled down: a 4-layer ModernBERT encoder (hidden 32,
global layers 0 and 3, local window ±8 so the 512-token rows cross it), laya's decision model on top
(type embedding, two pre-norm nn.TransformerEncoderLayer with d/64 heads, scorer, act head), every
parameter redrawn after init and stored as fp16 like the published checkpoint. The tokenizer is the tiny
Qwen byte-level BPE of tests/fixtures/qwen-tiny-tokenizer with [CLS], [SEP], [MASK] and [PAD] added.
The temperatures exercise per-bucket entries, the per-type fallback and the [0.5, 5] clamp (a shipped-
style choice:11+ of 0.1006). s1serve.json asks for the laya contract in fp32.

Then tools/reference/laya_contract.py runs laya==0.3.20's own Agent over the hand-written
tests/fixtures/tiny-laya/requests.jsonl (kept) and writes
packing.jsonl, heads.jsonl and expected.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import ModernBertConfig

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-laya")
SPECIAL = ["[CLS]", "[SEP]", "[MASK]", "[PAD]"]


def write_tokenizer() -> dict:
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    ids = {}
    next_id = max(token["id"] for token in tokenizer["added_tokens"]) + 1
    for content in SPECIAL:
        ids[content] = next_id
        tokenizer["added_tokens"].append({"id": next_id, "content": content, "single_word": False, "lstrip": False,
                                          "rstrip": False, "normalized": False, "special": True})
        next_id += 1
    os.makedirs(os.path.join(OUT, "tokenizer"), exist_ok=True)
    with open(os.path.join(OUT, "tokenizer", "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "cls_token": "[CLS]", "sep_token": "[SEP]",
              "mask_token": "[MASK]", "pad_token": "[PAD]", "unk_token": None, "model_max_length": 512,
              "clean_up_tokenization_spaces": False}
    with open(os.path.join(OUT, "tokenizer", "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    ids["vocab"] = next_id
    return ids


def write_checkpoint(out: str, encoder_config: ModernBertConfig, agent_config: dict) -> None:
    """rl_agent_config.json, encoder/config.json and model.safetensors (fp16, every parameter redrawn)."""
    os.makedirs(os.path.join(out, "encoder"), exist_ok=True)
    encoder_config.save_pretrained(os.path.join(out, "encoder"))
    with open(os.path.join(out, "rl_agent_config.json"), "w") as f:
        json.dump(agent_config, f, indent=2)

    from laya.common import build_model  # the pinned package's own DecisionModel

    torch.manual_seed(7)
    model = build_model(agent_config, encoder_dir=os.path.join(out, "encoder"), pretrained=False).eval()
    generator = torch.Generator().manual_seed(107)
    weights = {}
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name == "temperature":
                value = torch.tensor([0.9, 1.1, 1.2])  # the legacy buffer laya ignores at inference
            elif "norm" in name and name.endswith("weight") or name.startswith("scorer.0.weight"):
                value = 1.0 + 0.3 * torch.randn(tensor.shape, generator=generator)
            elif name.endswith("bias"):
                value = 0.1 * torch.randn(tensor.shape, generator=generator)
            elif "tok_embeddings" in name or name == "type_emb.weight":
                value = torch.randn(tensor.shape, generator=generator)
            else:
                value = torch.randn(tensor.shape, generator=generator) / tensor.shape[-1] ** 0.5
            if name == "scorer.3.weight":
                value = 6.0 * value  # logits a few units apart, so answers are decided, not near-uniform
            weights[name] = value.to(torch.float16).contiguous()
    save_file(weights, os.path.join(out, "model.safetensors"))
    os.chmod(os.path.join(out, "model.safetensors"), 0o644)


AGENT_CONFIG = {
    "encoder": "tiny-modernbert",
    "head_layers": 2,
    "act_costs": {"ask": 0.1},
    "max_len": 512,
    "head_max_len": 192,
    "amp_dtype": "bf16",
    "temperature": [1.3, 0.8, 2.0],
    "temperature_by_options": {"choice:2": 0.9, "choice:3-5": 1.7, "choice:11+": 0.1006, "score:3-5": 0.7,
                               "noul:2": 7.5},
}


def write_large(out: str) -> None:
    """A random checkpoint of LAYA's real shape (ModernBERT-large, 421M parameters, ~842 MB) for
    bench/modernbert_bench.cpp; no tokenizer or reference outputs."""
    config = ModernBertConfig(vocab_size=50368, hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
                              num_attention_heads=16, local_attention=128, global_attn_every_n_layers=3,
                              max_position_embeddings=8192, pad_token_id=50283, cls_token_id=50281,
                              sep_token_id=50282, bos_token_id=50281, eos_token_id=50282)
    write_checkpoint(out, config, dict(AGENT_CONFIG, encoder="answerdotai/ModernBERT-large"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", metavar="DIR", help="write a LAYA-shaped random checkpoint to DIR instead")
    args = parser.parse_args()
    if args.large:
        write_large(args.large)
        return
    # requests.jsonl (hand-written) stays; everything else is regenerated.
    for name in ("encoder", "tokenizer"):
        shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    ids = write_tokenizer()
    encoder_config = ModernBertConfig(
        vocab_size=ids["vocab"] + 4, hidden_size=32, intermediate_size=40, num_hidden_layers=4,
        num_attention_heads=2, local_attention=16, global_attn_every_n_layers=3, max_position_embeddings=512,
        pad_token_id=ids["[PAD]"], cls_token_id=ids["[CLS]"], sep_token_id=ids["[SEP]"], bos_token_id=ids["[CLS]"],
        eos_token_id=ids["[SEP]"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
    write_checkpoint(OUT, encoder_config, AGENT_CONFIG)
    with open(os.path.join(OUT, "s1serve.json"), "w") as f:
        json.dump({"contract": "laya", "name": "tiny-laya", "aliases": ["tiny-laya-english"],
                   "description": "Random tiny ModernBERT + decision-head stand-in for LAYA English (tests)",
                   "precision": "fp32"}, f, indent=2)
        f.write("\n")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "reference", "laya_contract.py"), OUT], check=True)


if __name__ == "__main__":
    main()
