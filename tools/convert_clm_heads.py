#!/usr/bin/env python3
"""Convert CLM projection heads (a torch.save .pt) into a safetensors file s1serve reads.

    python3 tools/convert_clm_heads.py CLM_v0.1-8B.pt MODEL_DIR

A CLM checkpoint (Contrastive-LM/CLM src/clm/heads.py; the published one is CLM_v0.1-8B.pt from
huggingface.co/Contrastive-LM/CLM-v0.1-8B) is a pickled dict:

    state_head, action_head   nn.Module state dicts: inp.{weight,bias}, hidden.N.{weight,bias},
                              norms.N.{weight,bias} (when cfg.layernorm), out.{weight,bias}
    logit_scale               log of the cosine scale (4.6132 for v0.1)
    cfg                       width, depth, activation, layernorm, residual, optional projection_dim
                              and hidden_size

MODEL_DIR is the Qwen3 checkpoint directory (Qwen/Qwen3-8B for v0.1). This writes
MODEL_DIR/clm_heads.safetensors (every tensor as F32, named <head>.<parameter>: 16 tensors for v0.1)
and creates or updates MODEL_DIR/s1serve.json with the contract, the heads file, logit_scale and
head_residual; other members already there are kept.

Needs torch and safetensors (tools only; s1serve itself never runs Python).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HEADS = ("state_head", "action_head")
HEADS_FILE = "clm_heads.safetensors"


def fail(message: str) -> None:
    print(f"convert_clm_heads: {message}", file=sys.stderr)
    sys.exit(1)


def convert(checkpoint: dict, model_dir: str) -> dict:
    import torch
    from safetensors.torch import save_file

    for key in (*HEADS, "logit_scale", "cfg"):
        if key not in checkpoint:
            fail(f"the checkpoint has no '{key}' entry (keys: {sorted(checkpoint)})")
    cfg = dict(checkpoint["cfg"])
    activation = cfg.get("activation", "gelu")
    if activation != "gelu":
        fail(f"cfg.activation is '{activation}'; s1serve's CLM heads implement gelu only")
    tensors = {}
    for head in HEADS:
        for name, value in checkpoint[head].items():
            tensors[f"{head}.{name}"] = value.detach().to(torch.float32).contiguous()
    depth = int(cfg.get("depth", 2))
    expected = 2 * (4 + (depth - 2) * (4 if cfg.get("layernorm", False) else 2))
    if len(tensors) != expected:
        fail(f"{len(tensors)} head tensors where cfg (depth {depth}, layernorm {cfg.get('layernorm')}) "
             f"implies {expected}")
    logit_scale = float(torch.as_tensor(checkpoint["logit_scale"]).float())
    metadata = {"format": "clm-heads", "cfg": json.dumps(cfg, sort_keys=True), "logit_scale": repr(logit_scale)}
    save_file(tensors, os.path.join(model_dir, HEADS_FILE), metadata=metadata)

    decision_path = os.path.join(model_dir, "s1serve.json")
    decision = {}
    if os.path.exists(decision_path):
        with open(decision_path, encoding="utf-8") as f:
            decision = json.load(f)
    decision.update({"contract": "clm", "heads_file": HEADS_FILE, "logit_scale": logit_scale,
                     "head_residual": bool(cfg.get("residual", False))})
    decision.setdefault("name", "clm-v0.1-8b")
    with open(decision_path, "w", encoding="utf-8") as f:
        json.dump(decision, f, indent=2)
        f.write("\n")
    return {"tensors": len(tensors), "parameters": sum(t.numel() for t in tensors.values()),
            "logit_scale": logit_scale, "cfg": cfg}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="the CLM .pt file (CLM_v0.1-8B.pt)")
    parser.add_argument("model_dir", help="the Qwen3 checkpoint directory to serve it from")
    args = parser.parse_args()
    if not os.path.isdir(args.model_dir):
        fail(f"{args.model_dir} is not a directory")
    import torch

    # The checkpoint is a pickle with a plain dict of tensors, numbers and a cfg dict.
    checkpoint = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    summary = convert(checkpoint, args.model_dir)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
