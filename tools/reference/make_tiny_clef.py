"""Write the tiny Clef stand-in, its prompt goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_clef.py
    /work/.venv-ref/bin/python tools/reference/make_tiny_clef.py --scaled DIR LAYERS   # benchmark stand-in

tests/fixtures/tiny-clef gets a Clef release's layout scaled down: a random
Qwen3_5ForConditionalGeneration (config.json + model.safetensors: text weights under
"model.language_model.", a tiny vision tower under "model.visual." that s1serve skips, an untied
lm_head), shaped like the Qwen3.5 hybrid (full attention every 4th layer), perturbed after init and
stored as BF16 as the release ships it; joint_head_config.json (the six keys of the public code:
hidden 32, width 16, 2 routing layers, 4 field layers, 2 heads, feed-forward 24) with a random
joint_head.safetensors in BF16 whose every norm, bias and scalar is off its init (joint_logit_scale
above the ln 100 clamp, so the clamp is exercised); s1serve.json naming the clef contract in fp32
with max_length 1400, so truncation and the schema refusal are cheap to reach.

Then tools/reference/clef_contract.py computes, with everything upcast to fp32:
prompts.jsonl (token ids and the layout of every request: the prompt goldens), expected.jsonl (the
answers, as `s1serve validate --reference` reads them), head.jsonl (per request the head's raw
logits per question) and head_inputs.safetensors (request 0's final hidden states, [tokens, 32]
fp32, so the unit test checks the head maths alone).
"""

from __future__ import annotations

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5ForConditionalGeneration

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clef_contract import ClefDecider, JointSchemaHead  # noqa: E402
from fixture_files import copy_tokenizer, remove_files, save_checkpoint, write_json, write_jsonl  # noqa: E402
from make_tiny_chat_models import perturb  # noqa: E402
from make_tiny_d3 import build as build_backbone  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-clef")
HEAD_CONFIG = {"hidden_size": 32, "width": 16, "routing_layers": 2, "layers": 4, "heads": 2, "feedforward": 24}
MAX_LENGTH = 1400

REQUESTS = [
    {"state": "Ticket: I was charged twice this month.",
     "questions": {
         "team": {"type": "choice", "instructions": "Which team?",
                  "criteria": {"technical": "Bugs", "billing": "Payments", "sales": None}},
         "refund": {"type": "noul", "instructions": "Refund asked?"},
         "anger": {"type": "score", "instructions": "How upset?", "criteria": ["calm", "annoyed", "furious"]}}},
    {"state": {"order": {"total": 12.5, "id": 7, "items": [1e-05, 100.0, 1e16]}, "note": "Café déjà vu"},
     "questions": {
         "ok": {"type": "noul", "instructions": {"q": "Is it fine?", "a": [1, 2.0]},
                "criteria": {"false": {"why": "broken"}, "true": "fine"}},
         "b": {"type": "choice", "instructions": "", "criteria": {"Zeta": None, "alpha": {"x": 1}, "beta": "B"}}}},
    {"state": ["look", {"k": None, "a": True}],
     "questions": {"only": {"type": "choice", "instructions": "One option", "criteria": {"solo": "the only one"}}}},
    {"state": "Short.",
     "questions": {f"q{i}": {"type": "score", "instructions": f"Level {i}?",
                             "criteria": [{"n": j} if j % 2 else f"level {j}" for j in range(2 + i)]}
                   for i in range(5)}},
    # A state longer than max_length leaves: its tokens are cut after the prefix's.
    {"state": "word " * 400, "questions": {"long": {"type": "noul", "instructions": "Is it long?",
                                                     "criteria": {"true": "yes"}}}},
]


def build(vocab: int) -> torch.nn.Module:
    """make_tiny_d3's hybrid shape (8 layers, hidden 32, untied, a tiny vision tower) as the
    multimodal wrapper the release is, with its LM head."""
    return Qwen3_5ForConditionalGeneration(build_backbone(vocab, 8).config)


def random_head(seed: int) -> JointSchemaHead:
    torch.manual_seed(seed)
    head = JointSchemaHead(**HEAD_CONFIG)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in head.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if p.dim() == 0:
                continue
            if p.dim() == 1 and name.endswith("weight"):  # LayerNorm scales
                p.copy_(1.0 + 0.3 * noise)
            elif p.dim() == 1:
                p.copy_(0.2 * noise)
            else:
                p.copy_(noise / p.shape[-1] ** 0.5)
        head.prior_logit_scale.fill_(0.7)
        head.joint_logit_scale.fill_(5.0)  # above ln 100: clamped to 100
        head.residual_gate.fill_(-0.4)
    return head


def write_scaled(out: str, layers: int) -> None:
    """A Clef-flash-shaped stand-in for benchmarks (not a fixture): the 9B's layer shapes (hidden
    4096, MLP 12288, 16/4 attention heads of 256, 16/32 GDN heads of 128, full attention every 4th
    layer) for `layers` of its 32 layers, the released head configuration (121.8M), the tiny
    tokenizer's vocabulary (the head reads LM-head rows, never the full vocabulary), BF16."""
    os.makedirs(out, exist_ok=True)
    copy_tokenizer(TOKENIZER_DIR, out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    config = build_backbone(len(tokenizer), layers).config
    config.text_config.update(dict(hidden_size=4096, intermediate_size=12288, num_attention_heads=16,
                                   num_key_value_heads=4, head_dim=256, linear_key_head_dim=128,
                                   linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32))
    config.text_config.rope_parameters["mrope_section"] = [11, 11, 10]
    config.vision_config.out_hidden_size = 4096
    torch.manual_seed(71)
    torch.set_default_dtype(torch.bfloat16)
    save_checkpoint(Qwen3_5ForConditionalGeneration(config), out)
    torch.set_default_dtype(torch.float32)
    head_config = dict(HEAD_CONFIG, hidden_size=4096, width=1024, heads=16, feedforward=4096)
    head = JointSchemaHead(**head_config)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in head.state_dict().items()},
              os.path.join(out, "joint_head.safetensors"))
    write_json(os.path.join(out, "joint_head_config.json"), head_config)
    write_json(os.path.join(out, "s1serve.json"), {"contract": "clef", "name": "scaled-clef-flash", "precision": "bf16"})
    print(f"wrote {out}")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--scaled":
        write_scaled(sys.argv[2], int(sys.argv[3]))
        return
    os.makedirs(OUT, exist_ok=True)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json", "joint_head.safetensors"))
    copy_tokenizer(TOKENIZER_DIR, OUT)
    tokenizer = AutoTokenizer.from_pretrained(OUT)
    torch.manual_seed(61)
    model = build(len(tokenizer))
    perturb(model, 62)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    head = random_head(63)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in head.state_dict().items()},
              os.path.join(OUT, "joint_head.safetensors"))
    write_json(os.path.join(OUT, "joint_head_config.json"), HEAD_CONFIG)
    write_json(os.path.join(OUT, "s1serve.json"),
               {"contract": "clef", "name": "tiny-clef", "aliases": ["tiny-clef-flash"],
                "description": "Random tiny Qwen3.5 stand-in for Clef / Clef-flash (tests)", "precision": "fp32",
                "max_length": MAX_LENGTH})
    write_jsonl(os.path.join(OUT, "requests.jsonl"), REQUESTS)

    decider = ClefDecider(OUT, MAX_LENGTH)
    prompts, heads, expected = [], [], []
    for number, request in enumerate(REQUESTS):
        ids, layout = decider.prompt(request)
        prompts.append({"request": number, "ids": ids,
                        "layout": [{"type": kind, "question": list(q), "options": [list(s) for s in spans]}
                                   for kind, q, spans in layout]})
        _, logits = decider.logits(request)
        heads.append({"request": number, "logits": logits})
        expected.append(decider.decide(request))
    if len(prompts[-1]["ids"]) != MAX_LENGTH:
        raise AssertionError("the long request was not cut to max_length")
    ids, layout = decider.prompt(REQUESTS[0])
    with torch.no_grad():
        hidden = decider.text_model(input_ids=torch.tensor([ids]), use_cache=False).last_hidden_state[0]
    save_file({"hidden": hidden.contiguous()}, os.path.join(OUT, "head_inputs.safetensors"))
    write_jsonl(os.path.join(OUT, "prompts.jsonl"), prompts)
    write_jsonl(os.path.join(OUT, "head.jsonl"), heads)
    write_jsonl(os.path.join(OUT, "expected.jsonl"), expected)
    print(f"wrote {OUT}: prompt lengths {[len(p['ids']) for p in prompts]}")


if __name__ == "__main__":
    main()
