"""Write the tiny JEMM stand-in checkpoint, its prompt and coercion goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_jemm.py

tests/fixtures/tiny-jemm/ gets a random Qwen3_5ForCausalLM shaped like the Qwen3.8 hybrid scaled down
(8 layers with full attention every 4th, an untied LM head as in Qwen3.8-27B; the real merged
checkpoint would be the same decoder with the LoRA folded into its weights), the tiny Qwen3.5
tokenizer and chat template of tests/fixtures/qwen-tiny-tokenizer/qwen3_5 (A..Z and 0..5 single
tokens), jemm_lm_head.safetensors holding the 32 label rows of the LM head as the reference export
writes them (tensor "weight", BF16 [32, hidden]), jemm_export.json with the export manifest's chat
prefix/suffix, label ids and temperature (the members s1serve checks), and s1serve.json asking for the jemm contract in
fp32. Weights are perturbed after init (make_tiny_chat_models.perturb) and stored as BF16; the
reference runs them upcast to fp32. max_position_embeddings is 16384 so that the contract's own
8,192-token prompt limit is what a long prompt meets.

Then tools/reference/jemm_contract.py over requests.jsonl writes prompts.jsonl (rendered text and
token ids per question), expected.jsonl (answers, the format `s1serve validate --reference` reads),
python_coercion.jsonl (str(), repr() and flattened str() of values, as Python computes them) and
limits.json (states whose one-question prompt is exactly 8,192 and 8,193 tokens).

tests/fixtures/tiny-jemm-lora/ gets a random PEFT LoRA adapter for that checkpoint shaped like JEMM's
(FP32, every text-decoder projection: q/k/v/o, the GDN in_proj_qkv/z/b/a and out_proj, MLP
gate/up/down; rank 4, alpha 8, so scale 2 as JEMM's) and expected.jsonl: the reference answers with
the adapter added to the fp32 weights. Tests serve a copy of tiny-jemm with these two adapter files.
"""

from __future__ import annotations

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decider_io import question_prompt_lines  # noqa: E402
from fixture_files import copy_tokenizer, read_jsonl, remove_files, save_checkpoint, write_json, write_jsonl  # noqa: E402
from jemm_contract import LABELS, SYSTEM, TEMPERATURE, JemmDecider, flat  # noqa: E402
from make_tiny_chat_models import perturb, tiny_decision_qwen3_5  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "qwen3_5")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-jemm")
LORA_OUT = os.path.join(REPO, "tests", "fixtures", "tiny-jemm-lora")
LORA_TARGETS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                "linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.in_proj_b", "linear_attn.in_proj_a",
                "linear_attn.out_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")

COERCION_VALUES = [
    True, False, None, 0, -7, 18446744073709551615, 2.5, 1e-05, 0.0001, 1e16, 123456789012345.6, -0.0, 100.0,
    "plain", "it's", 'say "hi"', "both ' and \"", "back\\slash", "tab\tnl\nret\r",
    "\x00\x07\x1b\x1f\x7f\x85\xa0\xad", "\u200b\u2028\u2029\u3000\ue000\ufeff", "\u0378\U000e0001\U0001f600",
    "caf\u00e9 e\u0301 \u65e5\u672c", "  lots \u3000 of\x1c\x1dspace\u00a0\u2028 here  ",
    [], {}, [1, None, True, "x'y", [2.5, {"k": "v"}]], {"a": [1, None], "b'": {"c": "d\n"}, "": False},
]

# The one question of the limits probes and the state text repeated to reach the limit.
LIMIT_QUESTION = {"type": "choice", "instructions": "Pick one.", "criteria": {"a": "first", "b": "second"}}


def limit_states(decider: JemmDecider) -> dict:
    """States whose prompt with LIMIT_QUESTION is exactly 8,192 and 8,193 tokens."""
    def length(state: str) -> int:
        return len(decider.prompt(state, LIMIT_QUESTION)[1])

    words = "alpha beta gamma delta "
    count = 1
    while length(words * count) < 8192:
        count *= 2
    low, high = 1, count
    while low < high:  # the fewest repetitions reaching 8,192 tokens
        middle = (low + high) // 2
        if length(words * middle) >= 8192:
            high = middle
        else:
            low = middle + 1
    base = words * (low - 1)
    result = {}
    for suffix_length in range(0, 200):
        state = base + "x" * suffix_length
        tokens = length(state)
        if tokens in (8192, 8193) and str(tokens) not in result:
            result[str(tokens)] = state
        if len(result) == 2:
            break
    if len(result) != 2:
        raise RuntimeError(f"could not hit 8192/8193 exactly: {sorted(result)}")
    return {"question": LIMIT_QUESTION, "fits": result["8192"], "too_long": result["8193"]}


def write_adapter(model: torch.nn.Module, rank: int = 4, alpha: int = 8) -> None:
    """A random LoRA over every text-decoder projection, in PEFT's file layout."""
    generator = torch.Generator().manual_seed(23)
    tensors = {}
    modules = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name.split(".", 3)[-1] in LORA_TARGETS:
            out_features, in_features = module.weight.shape
            key = f"base_model.model.{name}"
            tensors[key + ".lora_A.weight"] = torch.randn(rank, in_features, generator=generator) * 0.2
            tensors[key + ".lora_B.weight"] = torch.randn(out_features, rank, generator=generator) * 0.2
            modules.append(name.rsplit(".", 1)[-1])
    os.makedirs(LORA_OUT, exist_ok=True)
    save_file(tensors, os.path.join(LORA_OUT, "adapter_model.safetensors"), metadata={"format": "pt"})
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0, "bias": "none",
              "target_modules": sorted(set(modules)), "use_dora": False, "use_rslora": False,
              "fan_in_fan_out": False, "modules_to_save": None, "task_type": "CAUSAL_LM"}
    write_json(os.path.join(LORA_OUT, "adapter_config.json"), config)


def write_export_manifest(tokenizer) -> None:
    """The members of the reference export's jemm_export.json that s1serve checks at load: the chat
    prefix and suffix around the user text (recipe/jemm/export.py splits the rendered template at a
    marker), the label ids and the text temperature."""
    marker = "\x00SYSTEM1_JEMM_USER\x00"
    chat = tokenizer.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": marker}],
                                         tokenize=False, add_generation_prompt=True, enable_thinking=False)
    chat_prefix, chat_suffix = chat.split(marker)
    manifest = {"format": "jemm-native/2", "model_id": "JEMM", "temperature": TEMPERATURE,
                "chat_prefix": chat_prefix, "chat_suffix": chat_suffix, "labels": list(LABELS),
                "label_token_ids": [tokenizer.encode(label, add_special_tokens=False)[0] for label in LABELS],
                "label_head_file": "jemm_lm_head.safetensors", "label_head_tensor": "weight"}
    with open(os.path.join(OUT, "jemm_export.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main() -> None:
    torch.manual_seed(11)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json", "jemm_lm_head.safetensors"))
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    model = tiny_decision_qwen3_5(len(tokenizer), 16384, tied=False)
    perturb(model, 500)
    model = model.to(torch.bfloat16)
    save_checkpoint(model, OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)
    label_ids = [tokenizer.encode(label, add_special_tokens=False)[0] for label in LABELS]
    rows = model.lm_head.weight.detach()[label_ids].contiguous()
    save_file({"weight": rows}, os.path.join(OUT, "jemm_lm_head.safetensors"), metadata={"format": "pt"})
    write_export_manifest(tokenizer)
    decision_file = {
        "contract": "jemm",
        "name": "tiny-jemm",
        "aliases": ["tiny-jemm-text"],
        "description": "Random tiny Qwen3.5 stand-in for JEMM text (tests)",
        "precision": "fp32",
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    with open(os.path.join(OUT, "python_coercion.jsonl"), "w", encoding="utf-8") as f:
        for value in COERCION_VALUES:
            f.write(json.dumps({"value": value, "str": str(value), "repr": repr(value), "flat": flat(str(value))},
                               ensure_ascii=False) + "\n")

    decider = JemmDecider(OUT)
    requests = read_jsonl(os.path.join(OUT, "requests.jsonl"))
    write_jsonl(os.path.join(OUT, "prompts.jsonl"),
                (line for number, request in enumerate(requests)
                 for line in question_prompt_lines(number, request, decider.prompt)))
    write_jsonl(os.path.join(OUT, "expected.jsonl"), (decider.decide(request) for request in requests))
    with open(os.path.join(OUT, "limits.json"), "w", encoding="utf-8") as f:
        json.dump(limit_states(decider), f, ensure_ascii=False)
        f.write("\n")

    write_adapter(model)
    adapted = JemmDecider(OUT, adapter_dir=LORA_OUT)
    write_jsonl(os.path.join(LORA_OUT, "expected.jsonl"), (adapted.decide(request) for request in requests))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
