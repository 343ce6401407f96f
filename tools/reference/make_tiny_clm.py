"""Write the tiny CLM stand-in, its text and token-id goldens and its reference answers.

    /work/.venv-ref/bin/python tools/reference/make_tiny_clm.py

tests/fixtures/tiny-clm/ gets a random 2-layer Qwen3ForCausalLM (hidden 64, tied embeddings, the tiny
Qwen3 tokenizer of tests/fixtures/qwen-tiny-tokenizer) standing in for Qwen3-8B, and random CLM heads
of the published shape scaled down (64 -> 48 -> LayerNorm block 48 -> 16, GELU, no residual). The
heads are written as a torch.save .pt like CLM_v0.1-8B.pt and converted with
tools/convert_clm_heads.py (which also writes s1serve.json); the fixture's s1serve.json then names
the model, asks for fp32, a temperature of 0.8 and a 512-token text window. logit_scale is 2.0 (scale
e^2 ≈ 7.39) so that the random cosines give spread-out distributions; the clamp at 100 is covered by
the unit tests.

Then tools/reference/clm_contract.py (heads from the .pt, not from the conversion) over
requests.jsonl writes prompts.jsonl (state and candidate texts and token ids per question) and
expected.jsonl (answers and input_tokens), and heads.json holds three unit vectors and their
projections through both torch heads.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from clm_contract import ClmReference  # noqa: E402
from convert_clm_heads import convert  # noqa: E402
from fixture_files import copy_tokenizer, save_checkpoint, write_jsonl  # noqa: E402
from make_tiny_chat_models import perturb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TOKENIZER_DIR = os.path.join(REPO, "tests", "fixtures", "qwen-tiny-tokenizer")
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-clm")
HIDDEN, WIDTH, PROJECTION = 64, 48, 16


TEAM = {"type": "choice", "instructions": "Which team should handle this?",
        "criteria": {"billing": "Charges, invoices and refunds", "technical": None, "sales": {"scope": "pricing"},
                     "other": ""}}
URGENCY = {"type": "score", "instructions": "How urgent is it?",
           "criteria": ["Not urgent", "Needs attention soon", {"level": "now", "why": ["outage", "money"]}]}
REFUND = {"type": "noul", "instructions": "Does the customer ask for a refund?"}

# The requests the fixture answers: every text rule of clm.schema (objects, arrays, nesting, numbers,
# booleans, null, empty containers, Unicode spaces stripped, absent and empty descriptions), several
# questions sharing one state, a candidate text repeated across questions, one option.
REQUESTS = [
    {"state": "I was charged twice for order 4411 and want the second charge refunded.",
     "questions": {"team": TEAM, "urgency": URGENCY, "refund": REFUND}},
    {"state": {"ticket": {"id": 7, "tags": ["billing", "urgent"], "paid": True, "amount": 12.5,
                          "meta": {"empty": {}, "none": None}}, "body": "Charged twice", "n": [1, 2.5, None]},
     "questions": {"refund": {"type": "noul", "instructions": "Refund?",
                              "criteria": {"true": "Yes they do", "false": {"note": "none"}}},
                   "team": TEAM}},
    {"state": [{"k": 1}, {"k": [2, 3]}, "plain", []],
     "questions": {"pick": {"type": "choice", "instructions": "\u3000 Pick one \u00a0\n",
                            "criteria": {"a": None, "b": "alpha", "c": ["x", {"y": 1e-05}]}},
                   "same": {"type": "noul", "criteria": {"true": {}, "false": ""}}}},
    {"state": "  \t", "questions": {"only": {"type": "choice", "instructions": "Is this about money?",
                                              "criteria": {"yes": None}},
                                     "mood": {"type": "score", "instructions": "Anger?",
                                              "criteria": ["calm", "annoyed", "furious", "Not urgent"]}}},
    {"state": "The printer on floor 3 is on fire.",
     "questions": {"urgency": URGENCY, "refund": REFUND,
                   "bare": {"type": "noul", "instructions": None}}},
]


def encoder(vocab: int) -> torch.nn.Module:
    config = Qwen3Config(
        vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, attention_bias=False,
    )
    return Qwen3ForCausalLM(config)


def random_head(gen: torch.Generator) -> dict:
    def randn(*shape, std):
        return torch.randn(*shape, generator=gen) * std

    return {
        "inp.weight": randn(WIDTH, HIDDEN, std=0.4), "inp.bias": randn(WIDTH, std=0.1),
        "hidden.0.weight": randn(WIDTH, WIDTH, std=0.2), "hidden.0.bias": randn(WIDTH, std=0.1),
        "norms.0.weight": 1.0 + randn(WIDTH, std=0.2), "norms.0.bias": randn(WIDTH, std=0.1),
        "out.weight": randn(PROJECTION, WIDTH, std=0.2), "out.bias": randn(PROJECTION, std=0.1),
    }


def main() -> None:
    torch.manual_seed(11)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    model = encoder(len(AutoTokenizer.from_pretrained(TOKENIZER_DIR)))
    perturb(model, 400)
    save_checkpoint(model.to(torch.bfloat16), OUT)
    copy_tokenizer(TOKENIZER_DIR, OUT)

    gen = torch.Generator().manual_seed(12)
    checkpoint = {
        "state_head": random_head(gen), "action_head": random_head(gen), "logit_scale": torch.tensor(2.0),
        "cfg": {"width": WIDTH, "depth": 3, "projection_dim": PROJECTION, "activation": "gelu", "layernorm": True,
                "residual": False, "hidden_size": HIDDEN},
    }
    with tempfile.TemporaryDirectory() as temp:
        pt = os.path.join(temp, "tiny-clm.pt")
        torch.save(checkpoint, pt)
        print(convert(torch.load(pt, map_location="cpu", weights_only=False), OUT))
        path = os.path.join(OUT, "s1serve.json")
        with open(path, encoding="utf-8") as f:
            decision = json.load(f)
        decision.update({"name": "tiny-clm", "aliases": ["tiny-clm-v0.1"],
                         "description": "Random tiny Qwen3 + CLM heads stand-in for CLM-v0.1-8B (tests)",
                         "precision": "fp32", "temperature": 0.8, "max_text_tokens": 512,
                         "candidate_cache_entries": 64})
        with open(path, "w", encoding="utf-8") as f:
            json.dump(decision, f, indent=2)
            f.write("\n")

        reference = ClmReference(OUT, pt)
        requests = REQUESTS
        write_jsonl(os.path.join(OUT, "requests.jsonl"), requests)
        with open(os.path.join(OUT, "prompts.jsonl"), "w", encoding="utf-8") as f:
            for number, request in enumerate(requests):
                for key, text, texts in reference.prompts(request):
                    f.write(json.dumps({"request": number, "question": key, "state_text": text,
                                        "state_ids": reference.ids(text), "candidate_texts": texts,
                                        "candidate_ids": [reference.ids(t) for t in texts]},
                                       ensure_ascii=False) + "\n")
        # Head goldens: three unit inputs through both torch heads (L2-normalised projections).
        inputs = torch.nn.functional.normalize(torch.randn(3, HIDDEN, generator=gen), dim=-1)
        with torch.no_grad():
            heads = {"inputs": inputs.tolist(),
                     "state_head": torch.nn.functional.normalize(reference.state_head(inputs), dim=-1).tolist(),
                     "action_head": torch.nn.functional.normalize(reference.action_head(inputs), dim=-1).tolist()}
        with open(os.path.join(OUT, "heads.json"), "w", encoding="utf-8") as f:
            json.dump(heads, f)
            f.write("\n")
        write_jsonl(os.path.join(OUT, "expected.jsonl"), (reference.decide(request) for request in requests))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
