"""Write the tiny Vela 2.0 0.8B stand-in and its reference outputs.

    /work/.venv-ref/bin/python tools/reference/make_tiny_vela_decoder.py

tests/fixtures/tiny-vela-decoder gets a random Qwen3_5ForCausalLM shaped like the Qwen3.5 hybrid scaled
down (make_tiny_chat_models.tiny_decision_qwen3_5; the release is a 24-layer Qwen3.5-0.8B), the tiny
Qwen3.5 tokenizer of tests/fixtures/qwen-tiny-tokenizer/qwen3_5, vela_heads.safetensors (the
CandidateHead at the release's head_dim 256 under head.*, initialised as nn.LayerNorm / nn.Linear do,
norms and projections perturbed so answers are not uniform, plus set_bias, which the contract accepts
and does not read yet), calibration.json with the released temperatures (choice 1.3786, score 1.1278;
noul absent: 1.0), s1serve.json asking for the vela-0.8b contract with max_length 1200 (so the longest
state of requests.jsonl is cut), and the requests of tests/fixtures/tiny-vela. Then
tools/reference/vela_decoder_contract.py writes prompts.jsonl, heads.jsonl and expected.jsonl.
"""

from __future__ import annotations

import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402
from vela_decoder_contract import main as reference_main  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-vela-decoder")
HEAD_DIM = 256


def candidate_head(hidden: int) -> dict[str, torch.Tensor]:
    def linear(out: int, bias: bool = False):
        layer = torch.nn.Linear(hidden if out != 1 else HEAD_DIM, out, bias=bias)
        return layer.weight.detach() * 2.0, (layer.bias.detach() if bias else None)

    tensors = {}
    for norm in ("candidate_norm", "query_norm"):
        tensors[f"head.{norm}.weight"] = 1.0 + 0.3 * torch.randn(hidden)
        tensors[f"head.{norm}.bias"] = 0.2 * torch.randn(hidden)
    for name in ("key", "query", "query_mlp"):
        tensors[f"head.{name}.weight"] = linear(HEAD_DIM)[0]
    weight, bias = linear(HEAD_DIM, bias=True)
    tensors["head.candidate_mlp.weight"], tensors["head.candidate_mlp.bias"] = weight, bias
    tensors["head.scalar.weight"] = linear(1)[0] * 4.0
    tensors["set_bias"] = torch.zeros(1)
    return {k: v.float().contiguous() for k, v in tensors.items()}


def main() -> None:
    torch.manual_seed(2108)
    os.makedirs(OUT, exist_ok=True)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer))
    perturb(model, 2108)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT, ("tokenizer.json",))
    save_file(candidate_head(model.config.hidden_size), os.path.join(OUT, "vela_heads.safetensors"))
    write_json(os.path.join(OUT, "calibration.json"), {"temperature": {"choice": 1.3786, "score": 1.1278,
                                                                      "set": 1.0152, "span": 0.2927}})
    write_json(os.path.join(OUT, "s1serve.json"), {
        "contract": "vela-0.8b",
        "name": "tiny-vela-decoder",
        "aliases": ["vela-2.0-0.8b"],
        "description": "Random tiny Qwen3.5 stand-in for Vela 2.0 0.8B (tests)",
        "max_length": 1200,
    })
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "tiny-vela", "requests.jsonl"), OUT)
    sys.argv = [sys.argv[0], OUT]
    reference_main()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
