"""The Python reference for s1serve's vela-0.8b contract (choice, noul, score) on a model directory.

    /work/.venv-ref/bin/python tools/reference/vela_decoder_contract.py tests/fixtures/tiny-vela-decoder

Reads <dir>/requests.jsonl (System One request bodies) and writes, per request:
  prompts.jsonl   per question: the parts' ids, the block's ids, its option endpoints ([ABS] last for
                  choice) and real option count, and the state tokens before the cut;
  heads.jsonl     the candidate head's raw fp32 logits per question ([ABS] included);
  expected.jsonl  {"request", "answers", "input_tokens"} as the e2e tests and `s1serve validate` read them.

Independent of s1serve: HF `tokenizers`, Transformers' Qwen3_5ForCausalLM run over the parts and ONE block
at a time (the whole sequence, no prefix sharing: what the tree forward must equal), the candidate head
in torch as vllm-sr writes the Decision 2.0 / Vela 2.0 CandidateHead (heads/candidate.py), and the
answers of the 0.3B reference (vela_contract.answer_of). The layout follows vllm-sr's
families/vela2/decoder_layout.py; the noul and score option spellings, the state mapping and the
Target line for System One questions are s1serve's documented choices (docs/models/vela-2.0-0.8b.md).
"""

from __future__ import annotations

import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vela_contract import answer_of, fit, named_options, parts_of, python_text  # noqa: E402

PARTS_HEAD = "Context:\n"
SEGMENT_CLOSE = "\n</segment>\n"
SUFFIX = "\n\nSelect the single option best supported by the context and instructions.\nDecision:"
ABSTAIN = ("[ABS]", "None of the shown options applies.")
MIN_PART_BUDGET = 64


def text_of(value) -> str:
    return "" if value is None else python_text(value)


def option_block(key: str, description: str) -> str:
    body = json.dumps({"key": key, "description": description}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return f"\n<option>\n{body}\n</option>"


class Reference:
    def __init__(self, directory: str):
        with open(os.path.join(directory, "calibration.json"), encoding="utf-8") as f:
            self.temperature = json.load(f)["temperature"]
        with open(os.path.join(directory, "s1serve.json"), encoding="utf-8") as f:
            settings = json.load(f)
        self.tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        self.model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        self.max_length = min(settings.get("max_length", 16384), self.model.config.max_position_embeddings)
        self.head = {k[len("head."):]: v.float() for k, v in
                     load_file(os.path.join(directory, "vela_heads.safetensors")).items() if k.startswith("head.")}

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def render(self, request: dict):
        parts = parts_of(request["state"])
        target = ", ".join(role for role, _ in parts)
        blocks, schema = [], 0
        for key, question in request["questions"].items():
            names, options = named_options(question)
            abstain = question["type"] != "score"
            kind = "score" if question["type"] == "score" else "choice"  # noul reads as a choice
            head = (f"\n\nTask type: {kind}\nTarget: {target}\nQuestion:\n"
                    f"{text_of(question.get('instructions'))}\nOptions:")
            ids, ends = self.ids(head), []
            for option in options + ([ABSTAIN] if abstain else []):
                ids += self.ids(option_block(*option))
                ends.append(len(ids) - 1)
            ids += self.ids(SUFFIX)
            schema += 1 + len(ids) + len(options) + int(abstain)
            blocks.append({"key": key, "type": question["type"], "names": names, "ids": ids, "endpoints": ends,
                           "real_options": len(options)})
        overhead = len(self.ids(PARTS_HEAD)) + sum(len(self.ids(f'<segment role="{role}">\n')) +
                                                  len(self.ids(SEGMENT_CLOSE)) for role, _ in parts)
        texts = [self.ids(text) for _, text in parts]
        state_tokens = sum(len(t) for t in texts)
        budget = fit([len(t) for t in texts], 3 + len(parts) + schema, max(MIN_PART_BUDGET, self.max_length - overhead))
        if budget is None:
            return None
        texts = [text[:keep] for text, keep in zip(texts, budget)]
        prefix = self.ids(PARTS_HEAD)
        for (role, _), text in zip(parts, texts):
            prefix += self.ids(f'<segment role="{role}">\n') + text + self.ids(SEGMENT_CLOSE)
        return {"prefix": prefix, "blocks": blocks, "state_tokens": state_tokens}

    def candidate_head(self, candidates: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        h = self.head
        c = F.layer_norm(candidates, (candidates.shape[-1],), h["candidate_norm.weight"], h["candidate_norm.bias"],
                         1e-5)
        q = F.layer_norm(query, (query.shape[-1],), h["query_norm.weight"], h["query_norm.bias"], 1e-5)
        d = h["key.weight"].shape[0]
        bilinear = (F.linear(c, h["key.weight"]) * F.linear(q, h["query.weight"])).sum(-1) / math.sqrt(d)
        hidden = F.linear(c, h["candidate_mlp.weight"], h["candidate_mlp.bias"]) + F.linear(q, h["query_mlp.weight"])
        return bilinear + F.linear(F.gelu(hidden), h["scalar.weight"]).squeeze(-1)

    def logits(self, tree) -> list[list[float]]:
        out = []
        with torch.no_grad():
            for block in tree["blocks"]:
                ids = tree["prefix"] + block["ids"]
                hidden = self.model.model(input_ids=torch.tensor([ids])).last_hidden_state[0].float()
                offset = len(tree["prefix"])
                ends = [offset + e for e in block["endpoints"]]
                out.append([float(v) for v in self.candidate_head(hidden[ends], hidden[len(ids) - 1])])
        return out


def main() -> None:
    directory = sys.argv[1]
    reference = Reference(directory)
    with open(os.path.join(directory, "requests.jsonl"), encoding="utf-8") as f:
        requests = [json.loads(line) for line in f if line.strip()]
    prompts, heads, expected = [], [], []
    for number, request in enumerate(requests):
        tree = reference.render(request)
        if tree is None:
            continue  # the questions alone over max_length: refused, checked by the tests directly
        logits = reference.logits(tree)
        for block in tree["blocks"]:
            prompts.append({"request": number, "question": block["key"], "prefix": tree["prefix"],
                            "block": block["ids"], "endpoints": block["endpoints"],
                            "real_options": block["real_options"], "state_tokens": tree["state_tokens"]})
        heads.append({"logits": logits})
        answers = {b["key"]: answer_of(reference.temperature, b, values) for b, values in zip(tree["blocks"], logits)}
        tokens = len(tree["prefix"]) + sum(len(b["ids"]) for b in tree["blocks"])
        expected.append({"request": request, "answers": answers, "input_tokens": tokens})
    for name, lines in (("prompts.jsonl", prompts), ("heads.jsonl", heads), ("expected.jsonl", expected)):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
