"""Write the tiny chat decoders the label-token e2e test serves, and their reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_chat_models.py

For each family (Qwen3 dense, Qwen3.5 hybrid) a random checkpoint with the tiny Qwen-style tokenizer
of tests/fixtures/qwen-tiny-tokenizer (tokenizer.json, tokenizer_config.json with the family's chat
template: Qwen3's at the top, Qwen3.5's in qwen3_5/) goes to tests/fixtures/tiny-<family>-chat/. Weights are perturbed after init (so no norm
weight sits at its default) and stored as BF16 to keep the files small; the reference runs them
upcast to fp32, which is exactly what s1serve's fp32 engine reads.

Then tools/reference/label_token_contract.py answers every request of
tests/e2e/decoder_requests.jsonl with Transformers; the answers go to
tests/e2e/decoder_expected_<family>.jsonl for tests/e2e/decoder_e2e.py, with the top logits of one
chat-rendered text for `s1serve logits` (LOGITS_TEXT).
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM, Qwen3_5ForCausalLM, Qwen3_5TextConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from label_token_contract import LabelTokenDecider  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIRS = {
    "qwen3": os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer"),
    "qwen3_5": os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5"),
}
REQUESTS = os.path.join(REPO, "tests", "e2e", "decoder_requests.jsonl")
LOGITS_TEXT = "Is the parcel damaged? Answer yes or no."


def replace_matrix(p: torch.Tensor, noise: torch.Tensor, gen: torch.Generator) -> None:
    # Large enough that the label logits differ by whole units: answers are not uniform.
    p.copy_(noise * 0.08)


def perturb(model: torch.nn.Module, seed: int, matrix=replace_matrix) -> None:
    """Noise on every parameter, so no norm weight, dt_bias or gate sits at its default init (which
    would hide (1+w)-vs-w and gate-order bugs); `matrix(p, noise, gen)` sets the weight matrices."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.rand(p.shape, generator=gen) * 2.0 + 0.1))
            elif name.endswith("dt_bias"):
                p.copy_(noise * 0.5)
            elif p.dim() == 1:
                p.add_(noise * 0.2)
            elif "conv1d" in name:
                p.copy_(noise * 0.4)
            else:
                matrix(p, noise, gen)


def tiny_decision_qwen3_5(vocab: int, max_position_embeddings: int = 4096, tied: bool = True) -> torch.nn.Module:
    """The Qwen3.5 stand-in of the model-contract fixtures (Cua-S1, Decider, JEMM, Open-Jev, StartLux):
    hidden 32, 8 layers (two full-attention), partial rotary."""
    config = Qwen3_5TextConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=8, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, linear_conv_kernel_dim=4, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
        max_position_embeddings=max_position_embeddings, rms_norm_eps=1e-6, hidden_act="silu",
        tie_word_embeddings=tied, full_attention_interval=4,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1]},
    )
    return Qwen3_5ForCausalLM(config)


def qwen3_model(vocab: int) -> torch.nn.Module:
    config = Qwen3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, attention_bias=False,
    )
    return Qwen3ForCausalLM(config)


def qwen3_5_model(vocab: int) -> torch.nn.Module:
    config = Qwen3_5TextConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, linear_conv_kernel_dim=4, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, max_position_embeddings=2048,
        rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [2, 1, 1]},
    )
    return Qwen3_5ForCausalLM(config)


def write_model(name: str, model: torch.nn.Module, seed: int) -> str:
    out = os.path.join(REPO, "tests", "fixtures", f"tiny-{name}-chat")
    shutil.rmtree(out, ignore_errors=True)
    perturb(model, seed)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIRS[name], file), os.path.join(out, file))
    decision_file = {
        "contract": "label-token",
        "name": f"tiny-{name}",
        "aliases": [f"tiny-{name}-chat"],
        "description": f"Random tiny {name} chat decoder for tests (label-token contract)",
        "precision": "fp32",
    }
    with open(os.path.join(out, "s1serve.json"), "w") as f:
        json.dump(decision_file, f, indent=2)
        f.write("\n")
    for file in ("generation_config.json",):
        path = os.path.join(out, file)
        if os.path.exists(path):
            os.remove(path)
    return out


def main() -> None:
    torch.manual_seed(0)
    with open(REQUESTS) as f:
        requests = [json.loads(line) for line in f if line.strip()]
    for seed, (name, build) in enumerate((("qwen3", qwen3_model), ("qwen3_5", qwen3_5_model))):
        vocab = len(AutoTokenizer.from_pretrained(TOKENIZER_DIRS[name]))
        model_dir = write_model(name, build(vocab), 100 + seed)
        decider = LabelTokenDecider(model_dir)
        expected = os.path.join(REPO, "tests", "e2e", f"decoder_expected_{name}.jsonl")
        with open(expected, "w") as f:
            for request in requests:
                f.write(json.dumps(decider.decide(request), ensure_ascii=False) + "\n")
            prompt = decider.tokenizer.apply_chat_template(
                [{"role": "user", "content": LOGITS_TEXT}], tokenize=False, add_generation_prompt=True,
                enable_thinking=False)
            ids = decider.tokenizer(prompt, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = decider.model(torch.tensor([ids])).logits[0, -1]
            top = torch.topk(logits, 5)
            f.write(json.dumps({"logits_text": LOGITS_TEXT, "token_ids": ids,
                                "top": [[int(i), float(v)] for v, i in zip(top.values, top.indices)]}) + "\n")
        print(f"wrote {model_dir} and {expected}")


if __name__ == "__main__":
    main()
