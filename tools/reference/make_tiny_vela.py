"""Write the tiny Vela 2.0 0.3B stand-in package and its reference outputs.

    /work/.venv-ref/bin/python tools/reference/make_tiny_vela.py

tests/fixtures/tiny-vela/ gets a package laid out as the vela2-unified format is (vllm-sr's own fixture
writer and Core ML port describe it; the released vllm-sr/Vela-2.0-0.3B is not available here):
  config.json       model_type "vela2-unified", format_version 1, encoder_config (a Transformers
                    ModernBertConfig: 4 layers, hidden 32, globals 0 and 3, local window ±8, so the
                    ~100-300-token sequences cross it), proj_dim, readout "both", the eight markers and
                    their ids, bos/eos/pad ids and max_length (192 here, so long states are cut).
  calibration.json  the temperatures the released file carries per vllm-sr's design notes (choice 1.3786,
                    score 1.1278, set 1.0152, span 0.2927; noul absent, so 1.0) and span/set thresholds
                    s1serve ignores.
  model.safetensors "encoder."-prefixed ModernBertModel tensors and the marker head (norm, w_o, w_q, w_p,
                    log_tau, w_t, w_e, log_tau_span, cls_mlp.0, cls_mlp.3), fp32, every parameter redrawn
                    (norm weights around 1) so no init symmetry hides a wrong formula.
  tokenizer.json    tests/fixtures/gemma-tiny-tokenizer's Gemma-style file (markers as added tokens).
  s1serve.json      the vela-0.3b contract in fp32.

Then tools/reference/vela_contract.py answers the hand-written requests.jsonl (kept) with Transformers'
ModernBertModel and the readout in torch, writing packing.jsonl, heads.jsonl and expected.jsonl.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import save_file
from transformers import ModernBertConfig, ModernBertModel

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(REPO, "tests", "fixtures", "gemma-tiny-tokenizer", "tokenizer.json")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-vela")
MARKERS = ["[Q]", "[O]", "[ABS]", "[SEP_SCHEMA]", "[SEG_user]", "[SEG_answer]", "[E]", "[SEG_context]"]
HIDDEN, PROJECTION = 32, 16


def redrawn(module: torch.nn.Module, generator: torch.Generator, prefix: str) -> dict[str, torch.Tensor]:
    tensors = {}
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if "norm" in name and name.endswith("weight"):
                value = 1.0 + 0.3 * torch.randn(tensor.shape, generator=generator)
            else:
                value = 0.2 * torch.randn(tensor.shape, generator=generator)
            tensors[prefix + name] = value.float().contiguous()
    return tensors


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    shutil.copy(TOKENIZER, os.path.join(OUT, "tokenizer.json"))
    with open(TOKENIZER, encoding="utf-8") as f:
        added = {token["content"]: token["id"] for token in json.load(f)["added_tokens"]}
    vocab = max(added.values()) + 1

    encoder_config = ModernBertConfig(
        vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=48, num_hidden_layers=4, num_attention_heads=2,
        global_attn_every_n_layers=3, local_attention=16, max_position_embeddings=512, global_rope_theta=160000.0,
        local_rope_theta=10000.0, pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=2, sep_token_id=1,
        norm_bias=True, attention_bias=True, mlp_bias=True)
    with tempfile.TemporaryDirectory() as scratch:
        encoder_config.save_pretrained(scratch)
        with open(os.path.join(scratch, "config.json"), encoding="utf-8") as f:
            encoder_json = json.load(f)

    torch.manual_seed(5)
    generator = torch.Generator().manual_seed(2026)
    encoder = ModernBertModel(encoder_config).eval()
    tensors = redrawn(encoder, generator, "encoder.")
    head = torch.nn.ModuleDict({
        "norm": torch.nn.LayerNorm(HIDDEN),
        "w_o": torch.nn.Linear(HIDDEN, PROJECTION), "w_q": torch.nn.Linear(HIDDEN, PROJECTION),
        "w_p": torch.nn.Linear(HIDDEN, PROJECTION), "w_t": torch.nn.Linear(HIDDEN, PROJECTION),
        "w_e": torch.nn.Linear(HIDDEN, PROJECTION),
        "cls_mlp": torch.nn.Sequential(torch.nn.Linear(HIDDEN, 2 * HIDDEN), torch.nn.ReLU(), torch.nn.Identity(),
                                       torch.nn.Linear(2 * HIDDEN, 1)),
    })
    tensors.update(redrawn(head, generator, ""))
    tensors["log_tau"] = torch.tensor(-2.8)
    tensors["log_tau_span"] = torch.tensor(-2.6)
    save_file(tensors, os.path.join(OUT, "model.safetensors"))

    config = {
        "architectures": ["Vela2Model"],
        "model_type": "vela2-unified",
        "format_version": 1,
        "encoder_config": encoder_json,
        "proj_dim": PROJECTION,
        "readout": "both",
        "markers": MARKERS,
        "marker_ids": {name: added[name] for name in MARKERS},
        "bos_token_id": added["<bos>"],
        "eos_token_id": added["<eos>"],
        "pad_token_id": added["<pad>"],
        "max_length": 192,
        "window_overlap": 64,
    }
    with open(os.path.join(OUT, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    calibration = {
        "temperature": {"choice": 1.3786, "score": 1.1278, "set": 1.0152, "span": 0.2927},
        "thresholds": {"set:*": 0.3, "span:toxic": 0.1, "span:halu": 0.55, "span:*": 0.5},
        "pii_types": ["EMAIL_ADDRESS", "PERSON"],
        "pii_length_rule": {"anchors": [{"n_tokens": 21, "threshold": 0.75}, {"n_tokens": 1022, "threshold": 0.005919}]},
    }
    with open(os.path.join(OUT, "calibration.json"), "w", encoding="utf-8") as f:
        json.dump(calibration, f, indent=2)
        f.write("\n")
    with open(os.path.join(OUT, "s1serve.json"), "w", encoding="utf-8") as f:
        json.dump({"contract": "vela-0.3b", "name": "vela-tiny", "aliases": ["vela"], "precision": "fp32"}, f, indent=2)
        f.write("\n")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "reference", "vela_contract.py"), OUT], check=True)


if __name__ == "__main__":
    main()
