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

import argparse
import os

import torch
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTHS = (1, 7, 64, 65, 130)

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
    generator = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                # Norm gains around 1 but each different, so every norm weight is observable.
                parameter.copy_(1.0 + 0.3 * torch.randn(parameter.shape, generator=generator))
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
    print(f"{name}: max |logit| {max(t.abs().max().item() for k, t in tensors.items() if k.startswith('logits'))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "qwen3"))
    args = parser.parse_args()
    for name, (overrides, seed) in CASES.items():
        write_case(args.out, name, overrides, seed)


if __name__ == "__main__":
    main()
