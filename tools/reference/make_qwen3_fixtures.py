"""Write the dense Qwen3 parity fixtures.

    /work/.venv-ref/bin/python tools/reference/make_qwen3_fixtures.py [--out tests/parity/qwen3]

Each case directory holds a tiny random Qwen3ForCausalLM saved by Transformers (config.json +
model.safetensors, fp32) and reference.safetensors:
  ids_<n>     int32 [n]          input ids, n in LENGTHS
  hidden_<n>  f32 [n, hidden]    final-norm hidden states at every position
  logits_<n>  f32 [vocab]        last-position logits

Every parameter, norms included, is redrawn after Transformers' initialisation (which sets norms to
exactly 1 and projections to std 0.02, where a missing norm or a transposed projection could pass
unnoticed). The reference runs eager attention in fp32 on the CPU.
"""

from __future__ import annotations

import os
import sys

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_parity_fixtures import output_dir, redraw_parameters, write_case  # noqa: E402

# name: (config overrides, seed). head_dim differs from hidden/heads in all but one case; GQA ratios
# 1, 2 and 4; 1-3 layers; tied and untied heads; vocabularies that are not powers of two.
CASES = {
    "gqa1_tied": (dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                       intermediate_size=64, num_hidden_layers=1, vocab_size=300,
                       tie_word_embeddings=True, rope_theta=10000.0), 1),
    "gqa2_untied": (dict(hidden_size=40, num_attention_heads=4, num_key_value_heads=2, head_dim=10,
                         intermediate_size=72, num_hidden_layers=2, vocab_size=307,
                         tie_word_embeddings=False, rope_theta=1000000.0), 2),
    "gqa4_untied": (dict(hidden_size=48, num_attention_heads=8, num_key_value_heads=2, head_dim=6,
                         intermediate_size=64, num_hidden_layers=3, vocab_size=293,
                         tie_word_embeddings=False, rope_theta=10000.0), 3),
    "gqa2_tied_wide": (dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                            intermediate_size=96, num_hidden_layers=1, vocab_size=300,
                            tie_word_embeddings=True, rope_theta=500.0, rms_norm_eps=1e-5), 4),
}


def build(overrides: dict, seed: int) -> Qwen3ForCausalLM:
    overrides = dict(overrides)
    theta = overrides.pop("rope_theta")
    config = Qwen3Config(max_position_embeddings=256, rms_norm_eps=overrides.pop("rms_norm_eps", 1e-6),
                         rope_parameters={"rope_type": "default", "rope_theta": theta},
                         attn_implementation="eager", **overrides)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).to(torch.float32).eval()
    redraw_parameters(model, seed + 100)
    return model


def main() -> None:
    out = output_dir(__doc__, "qwen3")
    for name, (overrides, seed) in CASES.items():
        print(f"{name}: max |logit| {write_case(os.path.join(out, name), build(overrides, seed), seed + 200)}")


if __name__ == "__main__":
    main()
