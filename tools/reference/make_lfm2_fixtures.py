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

import argparse
import os

import torch
from safetensors.torch import save_file
from transformers import Lfm2Config, Lfm2ForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTHS = (1, 7, 64, 65, 130)

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
    generator = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                # Norm gains around 1 but each different, so every norm weight is observable.
                parameter.copy_(1.0 + 0.3 * torch.randn(parameter.shape, generator=generator))
            elif name.endswith(".bias"):
                parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))
            elif "embed_tokens" in name or "lm_head" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
            else:
                fan_in = parameter.shape[-1]
                parameter.copy_(torch.randn(parameter.shape, generator=generator) / fan_in ** 0.5)
    return model


def write_case(out_dir: str, name: str, overrides: dict, seed: int) -> None:
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    model = build(overrides, seed)
    model.save_pretrained(case_dir, safe_serialization=True)
    for extra in ("generation_config.json",):
        path = os.path.join(case_dir, extra)
        if os.path.exists(path):
            os.remove(path)
    generator = torch.Generator().manual_seed(seed + 200)
    tensors = {}
    with torch.no_grad():
        for n in LENGTHS:
            ids = torch.randint(0, model.config.vocab_size, (1, n), generator=generator)
            hidden = model.model(input_ids=ids).last_hidden_state[0]
            logits = model(input_ids=ids).logits[0, -1]
            tensors[f"ids_{n}"] = ids[0].to(torch.int32).contiguous()
            tensors[f"hidden_{n}"] = hidden.contiguous()
            tensors[f"logits_{n}"] = logits.contiguous()
    save_file(tensors, os.path.join(case_dir, "reference.safetensors"))
    width = model.model.layers[0].feed_forward.w1.weight.shape[0]
    print(f"{name}: MLP width {width}, max |logit| "
          f"{max(t.abs().max().item() for k, t in tensors.items() if k.startswith('logits'))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "lfm2"))
    args = parser.parse_args()
    for name, (overrides, seed) in CASES.items():
        write_case(args.out, name, overrides, seed)


if __name__ == "__main__":
    main()
