"""Write the LFM2 parity fixtures.

    /work/.venv-ref/bin/python tools/reference/make_lfm2_fixtures.py [--out tests/parity/lfm2]

Each case directory holds a tiny random Lfm2ForCausalLM saved by Transformers (config.json +
model.safetensors, fp32) and reference.safetensors:
  ids_<n>     int32 [n]          input ids, n in LENGTHS
  hidden_<n>  f32 [n, hidden]    final-norm hidden states at every position
  logits_<n>  f32 [vocab]        last-position logits

The cases keep LFM2's structure scaled down: gated short-conv layers with attention layers between
them (the real 2, 5, 8, … pattern shortened), GQA with per-head q/k norms, the MLP width adjusted as
Lfm2MLP does. One case names its layers by layer_types, ties the head and has no biases; the other
names them by full_attn_idxs, unties the head, has conv biases and a longer conv kernel. Every
parameter, norms and conv kernels included, is redrawn after Transformers' initialisation (which sets
norms to exactly 1, where a missing norm could pass unnoticed). The reference runs eager attention in
fp32 on the CPU.
"""

from __future__ import annotations

import os
import sys

import torch
from transformers import Lfm2Config, Lfm2ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_parity_fixtures import output_dir, redraw_parameters, write_case  # noqa: E402

CASES = {
    "types_tied": (dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
                        block_multiple_of=16, num_hidden_layers=6, vocab_size=300, conv_L_cache=3, conv_bias=False,
                        layer_types=["conv", "conv", "full_attention", "conv", "full_attention", "conv"],
                        tie_word_embeddings=True, rope_theta=1000000.0), 1),
    "idxs_untied_bias": (dict(hidden_size=24, num_attention_heads=6, num_key_value_heads=2, intermediate_size=96,
                              block_multiple_of=8, block_ffn_dim_multiplier=1.5, num_hidden_layers=5, vocab_size=307,
                              conv_L_cache=4, conv_bias=True, full_attn_idxs=[1, 3], tie_word_embeddings=False,
                              rope_theta=10000.0), 2),
}


def build(overrides: dict, seed: int) -> Lfm2ForCausalLM:
    overrides = dict(overrides)
    theta = overrides.pop("rope_theta")
    config = Lfm2Config(max_position_embeddings=256, norm_eps=1e-5,
                        rope_parameters={"rope_type": "default", "rope_theta": theta}, **overrides)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = Lfm2ForCausalLM(config).to(torch.float32).eval()
    redraw_parameters(model, seed + 100)
    return model


def main() -> None:
    out = output_dir(__doc__, "lfm2")
    for name, (overrides, seed) in CASES.items():
        model = build(overrides, seed)
        largest = write_case(os.path.join(out, name), model, seed + 200)
        print(f"{name}: MLP width {model.model.layers[0].feed_forward.w1.weight.shape[0]}, max |logit| {largest}")


if __name__ == "__main__":
    main()
