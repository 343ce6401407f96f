"""Write the ModernBERT parity fixtures.

    /work/.venv-ref/bin/python tools/reference/make_modernbert_fixtures.py [--out tests/parity/modernbert]

Each case directory holds a tiny random ModernBertModel saved by Transformers (config.json +
model.safetensors, fp32), batches.json (the sequence lengths of each batch) and reference.safetensors:
  b<k>_s<i>_ids     int32 [n]          input ids of sequence i of batch k
  b<k>_s<i>_hidden  f32 [n, hidden]    last hidden states (after the final norm)

Each batch runs through Transformers padded, with an attention mask, in eager fp32 on the CPU, so
unequal lengths check that s1serve's unpadded execution equals the masked padded forward. Every
batch has a sequence longer than the local window. Every parameter, norms and biases included, is
redrawn after Transformers' initialisation (which sets norms to exactly 1 and biases to 0).

Cases: a v5 config (layer_types, rope_parameters) without biases; one with every bias on, its own
RoPE thetas and a global layer every second layer; and one whose config.json is rewritten in the
Transformers 4 spelling (global_attn_every_n_layers, global_rope_theta, local_rope_theta), as the
published ModernBERT checkpoints ship it.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import ModernBertConfig, ModernBertModel

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)

# name: (config, seed, batches, v4 spelling)
CASES = {
    "no_bias": (dict(vocab_size=101, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                     num_attention_heads=2, local_attention=8, global_attn_every_n_layers=3), 1,
                [[20, 7, 13, 1], [9, 9], [40]], False),
    "bias_every_2": (dict(vocab_size=97, hidden_size=48, intermediate_size=64, num_hidden_layers=4,
                          num_attention_heads=4, local_attention=16, global_attn_every_n_layers=2,
                          norm_bias=True, attention_bias=True, mlp_bias=True, norm_eps=1e-6,
                          rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 80000.0},
                                           "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}}),
                     2, [[33, 33, 5], [70, 2]], False),
    "v4_config": (dict(vocab_size=89, hidden_size=48, intermediate_size=40, num_hidden_layers=4,
                       num_attention_heads=3, local_attention=12, global_attn_every_n_layers=3,
                       rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 20000.0},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 3000.0}}),
                  3, [[30, 17], [6]], True),
}


def build(config_args: dict, seed: int) -> ModernBertModel:
    config = ModernBertConfig(max_position_embeddings=512, attn_implementation="eager", **TOKENS, **config_args)
    torch.manual_seed(seed)
    model = ModernBertModel(config).to(torch.float32).eval()
    generator = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                parameter.copy_(1.0 + 0.3 * torch.randn(parameter.shape, generator=generator))
            elif name.endswith("bias"):
                parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))
            elif "tok_embeddings" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
            else:
                fan_in = parameter.shape[-1]
                parameter.copy_(torch.randn(parameter.shape, generator=generator) / fan_in ** 0.5)
    return model


def v4_spelling(config_file: str) -> None:
    with open(config_file) as f:
        config = json.load(f)
    rope = config.pop("rope_parameters")
    config.pop("layer_types")
    config["global_rope_theta"] = rope["full_attention"]["rope_theta"]
    config["local_rope_theta"] = rope["sliding_attention"]["rope_theta"]
    config["position_embedding_type"] = "absolute"
    config["torch_dtype"] = config.pop("dtype")
    config["transformers_version"] = "4.48.0"
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)


def write_case(out: str, name: str, config_args: dict, seed: int, batches: list, v4: bool) -> None:
    directory = os.path.join(out, name)
    os.makedirs(directory, exist_ok=True)
    model = build(config_args, seed)
    model.save_pretrained(directory)
    if v4:
        v4_spelling(os.path.join(directory, "config.json"))
        # The rewritten file must describe the same model to Transformers.
        reloaded = ModernBertModel.from_pretrained(directory, attn_implementation="eager").eval()
        assert reloaded.config.layer_types == model.config.layer_types
        assert reloaded.config.rope_parameters == model.config.rope_parameters
    generator = torch.Generator().manual_seed(seed + 200)
    tensors = {}
    for k, lengths in enumerate(batches):
        longest = max(lengths)
        ids = torch.zeros((len(lengths), longest), dtype=torch.long)
        mask = torch.zeros((len(lengths), longest), dtype=torch.long)
        for i, n in enumerate(lengths):
            ids[i, :n] = torch.randint(3, model.config.vocab_size, (n,), generator=generator)
            mask[i, :n] = 1
        with torch.no_grad():
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        for i, n in enumerate(lengths):
            tensors[f"b{k}_s{i}_ids"] = ids[i, :n].to(torch.int32).contiguous()
            tensors[f"b{k}_s{i}_hidden"] = hidden[i, :n].contiguous()
    save_file(tensors, os.path.join(directory, "reference.safetensors"))
    with open(os.path.join(directory, "batches.json"), "w") as f:
        json.dump(batches, f)
        f.write("\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "modernbert"))
    args = parser.parse_args()
    for name, (config_args, seed, batches, v4) in CASES.items():
        write_case(args.out, name, config_args, seed, batches, v4)
    print("wrote", ", ".join(CASES), "to", args.out)


if __name__ == "__main__":
    main()
