"""Write the Qwen3.5 hybrid (Gated DeltaNet + gated full attention) parity fixtures.

    /work/.venv-ref/bin/python tools/reference/make_qwen3_5_fixtures.py [--out tests/parity/qwen3_5]

Each case directory holds a tiny random checkpoint saved by the upstream Transformers classes
(config.json + model.safetensors, fp32) and reference.safetensors:
  ids_<n>             int32 [n]          input ids, n in LENGTHS
  hidden_<n>          f32 [n, hidden]    final-norm hidden states at every position (causal)
  logits_<n>          f32 [vocab]        last-position logits
  noncausal_hidden_<n> f32 [n, hidden]   for n in NONCAUSAL_LENGTHS: the same forward with
                                         bidirectional full-attention layers (GDN layers stay causal)
(Final GDN / conv states are not stored: the decoder interface does not expose them, and the
prefix tests cover them through continuations. Each case stays under 300 KB.)

Cases:
  tied8      Qwen3_5ForCausalLM, 8 layers, full_attention_interval 4 (config rewritten to state the
             interval instead of layer_types), tied embeddings.
  vl_untied  Qwen3_5ForConditionalGeneration (the multimodal wrapper: text weights under
             model.language_model., a tiny vision tower), untied LM head, an irregular explicit
             layer_types list, mrope_interleaved.

The reference runs the torch GDN path (no fla / causal-conv1d / kernels hub packages are installed;
the script refuses to run if they are) with eager attention in fp32, so Transformers' prefill is its
chunked delta rule (torch_chunk_gated_delta_rule, chunk 64, counted from the sequence start).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import (
    Qwen3_5Config,
    Qwen3_5ForCausalLM,
    Qwen3_5ForConditionalGeneration,
    Qwen3_5TextConfig,
)
from transformers.models.qwen3_5 import modeling_qwen3_5 as upstream

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_chat_models import perturb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTHS = (1, 63, 64, 65, 130)
# Lengths that also record the noncausal forward (kept few: fixture size).
NONCAUSAL_LENGTHS = (65, 130)


def text_config(layers: int, tie: bool, layer_types=None, interleaved: bool = False) -> dict:
    # Structural invariants of the real models, scaled down: rotary = head_dim/4 = 8 dims with
    # mrope_section summing to 4 pairs; GQA 2/1; GDN v heads a multiple of k heads (k < v, k > 1
    # so the consecutive repeat-interleave is observable); k_dim 8 != v_dim 6 so a transposed state
    # cannot pass; conv kernel 4 (the upstream test config uses 2).
    rope = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1]}
    if interleaved:
        rope["mrope_interleaved"] = True
    config = dict(
        vocab_size=96, hidden_size=32, intermediate_size=12, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=6,
        linear_num_key_heads=2, linear_num_value_heads=4,
        max_position_embeddings=512, rms_norm_eps=1e-6, hidden_act="silu",
        tie_word_embeddings=tie, rope_parameters=rope,
    )
    if layer_types is not None:
        config["layer_types"] = layer_types
    return config


def nudge_matrix(p: torch.Tensor, noise: torch.Tensor, gen: torch.Generator) -> None:
    # Small around the default init: the parity fixtures check numerics, not distinct answers.
    p.add_(noise * 0.02)
    p.mul_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))


def text_model(model):
    return model.model.language_model if isinstance(model, Qwen3_5ForConditionalGeneration) else model.model


def run(model, ids: torch.Tensor, noncausal: bool):
    kwargs = {}
    if noncausal:
        # A mask mapping per layer type: no mask at all on full-attention layers (eager attention
        # then attends everywhere); GDN layers have no mask anyway.
        kwargs["attention_mask"] = {"full_attention": None, "linear_attention": None}
        for layer in text_model(model).layers:
            if hasattr(layer, "self_attn"):
                layer.self_attn.is_causal = False
    try:
        if noncausal:
            out = text_model(model)(input_ids=ids[None], use_cache=False, **kwargs)
            return out.last_hidden_state[0], None
        out = model(input_ids=ids[None], use_cache=False, output_hidden_states=True)
        # The final-norm rows (what the logits are computed from), whatever hidden_states[-1] holds.
        final = text_model(model)(input_ids=ids[None], use_cache=False).last_hidden_state
        assert torch.equal(final, out.hidden_states[-1])
        return final[0], out.logits[0, -1]
    finally:
        for layer in text_model(model).layers:
            if hasattr(layer, "self_attn"):
                layer.self_attn.is_causal = True


def write_case(out_dir: str, name: str, model, vocab: int, seed: int, rewrite_interval: bool) -> None:
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    model.save_pretrained(case_dir, safe_serialization=True)
    if rewrite_interval:
        path = os.path.join(case_dir, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        del cfg["layer_types"]
        cfg["full_attention_interval"] = 4
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
    gen = torch.Generator().manual_seed(seed + 1)
    tensors = {}
    with torch.no_grad():
        for n in LENGTHS:
            ids = torch.randint(0, vocab, (n,), generator=gen)
            hidden, logits = run(model, ids, noncausal=False)
            tensors[f"ids_{n}"] = ids.to(torch.int32)
            tensors[f"hidden_{n}"] = hidden.contiguous()
            tensors[f"logits_{n}"] = logits.contiguous()
            if n in NONCAUSAL_LENGTHS:
                tensors[f"noncausal_hidden_{n}"] = run(model, ids, noncausal=True)[0].contiguous()
    save_file(tensors, os.path.join(case_dir, "reference.safetensors"),
              metadata={"transformers": __import__("transformers").__version__,
                        "torch": torch.__version__})
    print(name, {k: tuple(v.shape) for k, v in tensors.items() if k.endswith("_130")})


def check_chunked_is_recurrent(model, vocab: int) -> None:
    # Documents what Transformers' prefill is: the chunked delta rule (chunk 64). Its state after a
    # 130-token prefill matches a token-by-token recurrent decode to fp32 rounding.
    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(0, vocab, (130,), generator=gen)
    with torch.no_grad():
        full = model(input_ids=ids[None], use_cache=True)
        out = model(input_ids=ids[None, :1], use_cache=True)
        cache = out.past_key_values if hasattr(out, "past_key_values") else out.cache
        for t in range(1, 130):
            out = model(input_ids=ids[None, t:t + 1], cache=cache, use_cache=True)
            cache = out.past_key_values if hasattr(out, "past_key_values") else out.cache
        diff = (full.logits[0, -1] - out.logits[0, -1]).abs().max().item()
    print(f"chunked prefill vs token-by-token decode, last logits max|d| = {diff:.2e}")
    assert diff < 1e-4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "qwen3_5"))
    args = parser.parse_args()
    for module in ("fla", "causal_conv1d", "kernels"):
        if importlib.util.find_spec(module) is not None:
            raise SystemExit(f"{module} is installed: the reference must run the torch GDN path")
    assert upstream.torch_chunk_gated_delta_rule.__module__ == upstream.__name__
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    torch.manual_seed(11)
    tied = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**text_config(8, tie=True)))
    tied.config._attn_implementation = "eager"
    perturb(tied, 101, nudge_matrix)
    tied.eval()
    check_chunked_is_recurrent(tied, 96)
    write_case(args.out, "tied8", tied, 96, 101, rewrite_interval=True)

    torch.manual_seed(12)
    layer_types = ["linear_attention", "full_attention", "linear_attention", "linear_attention", "full_attention"]
    vision = dict(depth=1, hidden_size=16, intermediate_size=12, num_heads=2, in_channels=3, patch_size=2,
                  spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=16)
    config = Qwen3_5Config(text_config=text_config(5, tie=False, layer_types=layer_types, interleaved=True),
                           vision_config=vision, tie_word_embeddings=False)
    vl = Qwen3_5ForConditionalGeneration(config)
    vl.config._attn_implementation = "eager"
    vl.config.text_config._attn_implementation = "eager"
    perturb(vl, 202, nudge_matrix)
    vl.eval()
    write_case(args.out, "vl_untied", vl, 96, 202, rewrite_interval=False)


if __name__ == "__main__":
    main()
