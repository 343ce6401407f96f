"""Write the tiny LFM2.5-350M stand-in checkpoint, its prompt goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_lfm2.py
    /work/.venv-ref/bin/python tools/reference/make_tiny_lfm2.py --scaled DIR   # benchmark checkpoint

--scaled writes a random checkpoint of LFM2-350M's shape instead (1024 wide, 16 layers with attention
at 2, 5, 8, 10, 12 and 14, GQA 16/8, MLP 4608, 65,536-row tied embedding; ~700 MB in BF16) with the
tiny tokenizer below, served bf16 by the lfm2-candidate-likelihood contract: for
docs/benchmarks/questions.md, not for tests.

tests/fixtures/tiny-lfm2/ gets:
- a tiny byte-level BPE tokenizer with LFM2's chat tokens: the vocabulary and pipeline of
  tests/fixtures/qwen-tiny-tokenizer (LFM2's own split pattern is not pinned here) plus LFM2's
  <|pad|> and <|startoftext|> (the bos_token its chat template writes), <|im_start|>/<|im_end|>
  kept; tokenizer_config.json carries the LFM2.5 chat template
  (tests/parity/text/chat_templates/lfm2.jinja);
- a random Lfm2ForCausalLM shaped like LFM2-350M scaled down (8 layers, attention at 2, 5 and 7,
  GQA 4/2, conv kernel 3, tied embeddings), perturbed after init (make_tiny_chat_models.perturb)
  and stored as BF16 to keep the files small; the reference runs it upcast to fp32;
- s1serve.json asking for the lfm2-candidate-likelihood contract in fp32.

Then tools/reference/lfm2_contract.py over tests/fixtures/tiny-lfm2/requests.jsonl writes
prompts.jsonl (rendered text, prefix ids, suffix and value ids per question: the prompt goldens)
and expected.jsonl (answers, the format `s1serve validate --reference` reads), and
tools/reference/label_token_contract.py over LABEL_TOKEN_REQUESTS writes label_token_expected.jsonl:
the same checkpoint served as a plain LFM2 chat model by the generic label-token contract.
"""

from __future__ import annotations

import json
import os
import sys

import torch
from tokenizers import AddedToken, Tokenizer
from transformers import AutoTokenizer, Lfm2Config, Lfm2ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_files import read_jsonl, remove_files, save_checkpoint, write_json, write_jsonl  # noqa: E402
from label_token_contract import LabelTokenDecider  # noqa: E402
from lfm2_contract import Lfm2Decider  # noqa: E402
from make_tiny_chat_models import perturb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QWEN_TOKENIZER = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer", "tokenizer.json")
TEMPLATE = os.path.join(REPO, "tests", "parity", "text", "chat_templates", "lfm2.jinja")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-lfm2")
LABEL_TOKEN_REQUESTS = [
    {"state": "I was charged twice.", "questions": {
        "team": {"type": "choice", "instructions": "Who handles it?", "criteria": {"billing": "payments", "tech": None}},
        "refund": {"type": "noul", "instructions": "Refund asked?"},
        "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]}}},
    {"state": {"ticket": "Où est ma commande ?"}, "questions": {"q": {"type": "choice", "criteria": {"a": None, "b": "x"}}}},
]


def write_tokenizer(out: str = OUT) -> None:
    tokenizer = Tokenizer.from_file(QWEN_TOKENIZER)
    tokenizer.add_special_tokens([AddedToken("<|pad|>", special=True, normalized=False),
                                  AddedToken("<|startoftext|>", special=True, normalized=False)])
    tokenizer.save(os.path.join(out, "tokenizer.json"))
    with open(TEMPLATE, encoding="utf-8") as f:
        template = f.read()
    config = {
        "tokenizer_class": "TokenizersBackend",
        "bos_token": "<|startoftext|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|pad|>",
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "chat_template": template,
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")


def build(vocab: int, pad: int, bos: int, eos: int) -> torch.nn.Module:
    config = Lfm2Config(
        vocab_size=vocab, hidden_size=32, intermediate_size=96, block_multiple_of=16, num_hidden_layers=8,
        num_attention_heads=4, num_key_value_heads=2, conv_L_cache=3, conv_bias=False, norm_eps=1e-5,
        max_position_embeddings=4096, tie_word_embeddings=True, full_attn_idxs=[2, 5, 7],
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        pad_token_id=pad, bos_token_id=bos, eos_token_id=eos)
    return Lfm2ForCausalLM(config)


def write_scaled(out: str) -> None:
    """LFM2-350M's published shape with random weights: prefill cost depends on shapes, not values."""
    os.makedirs(out, exist_ok=True)
    write_tokenizer(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    config = Lfm2Config(
        vocab_size=65536, hidden_size=1024, intermediate_size=6656, block_multiple_of=256,
        block_auto_adjust_ff_dim=True, block_ffn_dim_multiplier=1.0, num_hidden_layers=16,
        num_attention_heads=16, num_key_value_heads=8, conv_L_cache=3, conv_bias=False, norm_eps=1e-5,
        max_position_embeddings=128000, tie_word_embeddings=True, full_attn_idxs=[2, 5, 8, 10, 12, 14],
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        pad_token_id=tokenizer.convert_tokens_to_ids("<|pad|>"),
        bos_token_id=tokenizer.convert_tokens_to_ids("<|startoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"))
    torch.manual_seed(11)
    Lfm2ForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    with open(os.path.join(out, "s1serve.json"), "w") as f:
        json.dump({"contract": "lfm2-candidate-likelihood", "name": "lfm2-350m-scaled",
                   "description": "Random LFM2-350M-shaped stand-in (benchmarks)", "precision": "bf16"}, f, indent=2)
        f.write("\n")
    print(f"wrote {out}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--scaled":
        write_scaled(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    remove_files(OUT, ("config.json", "model.safetensors", "generation_config.json"))
    write_tokenizer()
    tokenizer = AutoTokenizer.from_pretrained(OUT)
    # Transformers and the tokenizers library must agree on the ids s1serve reproduces.
    plain = Tokenizer.from_file(os.path.join(OUT, "tokenizer.json"))
    probe = "<|startoftext|><|im_start|>user\ncafé \"x\"\n<|im_end|>\n{\n  \"answer\": "
    assert tokenizer.encode(probe, add_special_tokens=False) == plain.encode(probe, add_special_tokens=False).ids
    torch.manual_seed(11)
    model = build(len(tokenizer), tokenizer.convert_tokens_to_ids("<|pad|>"),
                  tokenizer.convert_tokens_to_ids("<|startoftext|>"), tokenizer.convert_tokens_to_ids("<|im_end|>"))
    perturb(model, 400)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    decision_file = {
        "contract": "lfm2-candidate-likelihood",
        "name": "tiny-lfm2",
        "aliases": ["tiny-lfm2.5-350m"],
        "description": "Random tiny LFM2 stand-in for LFM2.5-350M (tests)",
        "precision": "fp32",
    }
    write_json(os.path.join(OUT, "s1serve.json"), decision_file)

    decider = Lfm2Decider(OUT)
    requests = read_jsonl(os.path.join(OUT, "requests.jsonl"))
    with open(os.path.join(OUT, "prompts.jsonl"), "w", encoding="utf-8") as f:
        for number, request in enumerate(requests):
            for key, question in request["questions"].items():
                rendered, ids, suffix, values = decider.prompt(request["state"], question)
                f.write(json.dumps({"request": number, "question": key, "text": rendered, "ids": ids,
                                    "suffix": suffix, "values": values}, ensure_ascii=False) + "\n")
    write_jsonl(os.path.join(OUT, "expected.jsonl"), (decider.decide(request) for request in requests))
    write_label_token_expected()
    print(f"wrote {OUT}")


def write_label_token_expected() -> None:
    decider = LabelTokenDecider(OUT, None, 1.0)
    write_jsonl(os.path.join(OUT, "label_token_expected.jsonl"), (dict(decider.decide(request), request=request) for request in LABEL_TOKEN_REQUESTS))


if __name__ == "__main__":
    main()
