"""Write the tiny D3 and pplx-decider stand-ins, their prompt goldens and their reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_d3.py

Each of tests/fixtures/tiny-d3 and tests/fixtures/tiny-pplx gets the layout of a code-readout
checkpoint: a random bare Qwen3_5Model (config.json + model.safetensors: text weights under
"language_model.", a tiny vision tower under "visual." that s1serve skips, no LM head), shaped like
the Qwen3.5 hybrid scaled down (full attention every 4th layer, untied embeddings), perturbed after
init (make_tiny_chat_models.perturb) and stored as BF16 (the reference runs it upcast to fp32);
readout.safetensors {"weight": [255, hidden]} (float32 for d3, bfloat16 for pplx as pplx ships it);
decision_config.json with noncausal_full_attention and a non-unit temperature (d3 in the
d3-code-readout-v1 format with max_length 1024, pplx in its own format_version 1 layout); s1serve.json
naming the contract in fp32.

The tokenizer is the tiny Qwen3.5 one (tests/fixtures/qwen-tiny-tokenizer/qwen3_5) with two-letter
merges added until 255 answer codes (A..Z, AA..) are single tokens, also right after the chat prefix,
derived as the d3 runtime's answer_codes() derives them.

Then tools/reference/code_readout_contract.py over requests.jsonl writes prompts.jsonl (rendered text
and token ids per question: the prompt goldens) and expected.jsonl (the reference's answers, the
format `s1serve validate --reference` reads). Before writing, the script checks that its noncausal
forward (pplx's SDPA mask) equals an eager forward with is_causal off (the mode the Qwen3.5 parity
fixtures use) and differs from the causal one.
"""

from __future__ import annotations

import itertools
import json
import os
import string
import sys

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer
from transformers import AutoTokenizer, Qwen3_5Config
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5Model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code_readout_contract import CodeReadoutDecider  # noqa: E402
from decider_io import question_prompt_lines  # noqa: E402
from fixture_files import read_jsonl, remove_files, save_checkpoint, write_json, write_jsonl  # noqa: E402
from make_tiny_chat_models import perturb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
CODES = 255
# One 40-hex revision string standing in for the real pins (provenance only).
REVISION = "0" * 40


def candidate_codes() -> list[str]:
    return list(string.ascii_uppercase) + ["".join(p) for p in itertools.product(string.ascii_uppercase, repeat=2)]


def write_tokenizer(out: str) -> None:
    """The tiny Qwen3.5 tokenizer with enough two-letter codes made single tokens (merges first).

    The new vocabulary entries continue the BPE ids; the special tokens move up behind them (HF
    tokenizers numbers added tokens after a gap-free vocabulary), in tokenizer_config.json too."""
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(TOKENIZER_DIR, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    base = Tokenizer.from_str(json.dumps(data))
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    singles = [c for c in candidate_codes() if len(base.encode(c, add_special_tokens=False).ids) == 1]
    added = []
    for code in candidate_codes():
        if len(singles) + len(added) == CODES:
            break
        if code not in singles:
            vocab[code] = next_id
            next_id += 1
            added.append([code[0], code[1]])
    data["model"]["merges"] = added + data["model"]["merges"]
    moved = {}
    for token in data["added_tokens"]:
        moved[str(token["id"])] = str(token["id"] + len(added))
        token["id"] += len(added)
    config["added_tokens_decoder"] = {moved[key]: value for key, value in config["added_tokens_decoder"].items()}
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")


def answer_codes(tokenizer) -> tuple[list[str], list[int]]:
    """The d3 runtime's derivation: the first 255 single-token codes that stay one token after the chat prefix."""
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": "Choose an option."}], tokenize=False,
                                           add_generation_prompt=True, enable_thinking=False)
    prefix_ids = tokenizer.encode(prefix, add_special_tokens=False)
    codes, ids = [], []
    for code in candidate_codes():
        encoded = tokenizer.encode(code, add_special_tokens=False)
        if len(encoded) != 1 or encoded[0] in ids:
            continue
        if tokenizer.encode(prefix + code, add_special_tokens=False) != prefix_ids + encoded:
            continue
        codes.append(code)
        ids.append(encoded[0])
        if len(codes) == CODES:
            break
    if len(codes) != CODES:
        raise ValueError(f"only {len(codes)} single-token answer codes")
    return codes, ids


def build(vocab: int, layers: int) -> torch.nn.Module:
    text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                num_attention_heads=2, num_key_value_heads=1, head_dim=32, linear_conv_kernel_dim=4,
                linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
                max_position_embeddings=4096, rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=False,
                full_attention_interval=4,
                rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [2, 1, 1]})
    vision = dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=2, out_hidden_size=32, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16)
    return Qwen3_5Model(Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=False))


def check_noncausal(decider: CodeReadoutDecider, ids: list[int]) -> None:
    noncausal = decider.last_hidden(ids, noncausal=True)
    causal = decider.last_hidden(ids, noncausal=False)
    # The same forward as make_qwen3_5_fixtures.py runs it: no mask, is_causal off.
    layers = [layer for layer in decider.text_model.layers if hasattr(layer, "self_attn")]
    for layer in layers:
        layer.self_attn.is_causal = False
    try:
        with torch.no_grad():
            plain = decider.text_model(input_ids=torch.tensor([ids]), use_cache=False,
                                       attention_mask={"full_attention": None, "linear_attention": None})
    finally:
        for layer in layers:
            layer.self_attn.is_causal = True
    if not torch.allclose(plain.last_hidden_state[0, -1], noncausal, atol=1e-5, rtol=1e-5):
        raise AssertionError("the SDPA-mask noncausal forward differs from the is_causal=False one")
    if torch.allclose(causal, noncausal, atol=1e-3):
        raise AssertionError("noncausal and causal forwards agree: the mask is not bidirectional")


def write_fixture(name: str, family: str, seed: int, layers: int, decision: dict, decision_file: dict,
                  readout_dtype: torch.dtype) -> None:
    out = os.path.join(FIXTURES, name)
    os.makedirs(out, exist_ok=True)
    remove_files(out, ("config.json", "model.safetensors", "generation_config.json", "readout.safetensors"))
    write_tokenizer(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    codes, token_ids = answer_codes(tokenizer)

    torch.manual_seed(seed)
    model = build(len(tokenizer), layers)
    perturb(model, seed + 1)
    save_checkpoint(model.to(torch.bfloat16), out)
    gen = torch.Generator().manual_seed(seed + 2)
    readout = (torch.randn((CODES, 32), generator=gen) * 0.15).to(readout_dtype)
    save_file({"weight": readout.contiguous()}, os.path.join(out, "readout.safetensors"))

    write_json(os.path.join(out, "decision_config.json"), dict(decision, codes=codes, token_ids=token_ids))
    write_json(os.path.join(out, "s1serve.json"), decision_file)

    decider = CodeReadoutDecider(out, family)
    requests = read_jsonl(os.path.join(out, "requests.jsonl"))
    first = next(iter(requests[0]["questions"].values()))
    check_noncausal(decider, decider.prompt(requests[0]["state"], first)[1])
    write_jsonl(os.path.join(out, "prompts.jsonl"),
                (line for number, request in enumerate(requests)
                 for line in question_prompt_lines(number, request, decider.prompt)))
    write_jsonl(os.path.join(out, "expected.jsonl"), (decider.decide(request) for request in requests))
    print(f"wrote {out}")


def main() -> None:
    write_fixture(
        "tiny-d3", "d3", 31, 8,
        {"format_version": 1, "format_id": "d3-code-readout-v1", "prompt": "d3", "base_model": "tiny-random",
         "revision": REVISION, "temperature": 0.8731, "attention_mode": "noncausal_full_attention",
         "pooling": "last", "max_length": 1024, "readout_dtype": "float32"},
        {"contract": "d3", "name": "tiny-d3", "aliases": ["tiny-decision-3"],
         "description": "Random tiny Qwen3.5 stand-in for D3 (tests)", "precision": "fp32"},
        torch.float32)
    write_fixture(
        "tiny-pplx", "pplx", 41, 8,
        {"format_version": 1, "base_model": "tiny-random", "revision": REVISION, "temperature": 1.2345,
         "attention_mode": "noncausal_full_attention"},
        {"contract": "pplx-decider", "name": "tiny-pplx",
         "description": "Random tiny Qwen3.5 stand-in for pplx-decider v1.1 (tests)", "precision": "fp32"},
        torch.bfloat16)


if __name__ == "__main__":
    main()
