"""What the causal-decoder parity fixture generators (make_qwen3_fixtures.py, make_lfm2_fixtures.py)
share: the parameter redraw after Transformers' initialisation, and the case directory with its
reference.safetensors (ids_<n>, hidden_<n>, logits_<n> for n in LENGTHS) that
tests/parity/decoder_parity_support.h reads.
"""

from __future__ import annotations

import argparse
import os

import torch
from safetensors.torch import save_file

from fixture_files import save_checkpoint

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTHS = (1, 7, 64, 65, 130)


def redraw_parameters(model: torch.nn.Module, seed: int) -> None:
    """Every parameter redrawn (Transformers sets norms to exactly 1 and projections to std 0.02, where a
    missing norm or a transposed projection could pass unnoticed): norm gains around 1 but each
    different, biases small, embeddings and heads unit normal, projections scaled by 1/sqrt(fan-in)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.copy_(1.0 + 0.3 * torch.randn(parameter.shape, generator=generator))
            elif name.endswith(".bias"):
                parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))
            elif "embed_tokens" in name or "lm_head" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
            else:
                fan_in = parameter.shape[-1]
                parameter.copy_(torch.randn(parameter.shape, generator=generator) / fan_in ** 0.5)


def write_case(case_dir: str, model, seed: int) -> float:
    """The checkpoint and its reference outputs on random ids drawn from `seed`; the largest |logit|."""
    os.makedirs(case_dir, exist_ok=True)
    save_checkpoint(model, case_dir)
    generator = torch.Generator().manual_seed(seed)
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
    return max(t.abs().max().item() for k, t in tensors.items() if k.startswith("logits"))


def output_dir(doc: str, family: str) -> str:
    """--out, by default tests/parity/<family>."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", family))
    return parser.parse_args().out
