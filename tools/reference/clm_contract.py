"""Python reference of s1serve's CLM-v0.1-8B contract (src/decide/contracts/clm.h).

A fixture generator built on Transformers and torch, never part of the serving path. It follows
Contrastive-LM/CLM (src/clm/schema.py texts as its tests and ThinkFlowLab/system1-omni's text oracle
pin them, src/clm/embedder.py last-token embeddings L2-normalised, src/clm/heads.py heads and
exp(logit_scale).clamp(max=100)) written out independently:

- texts: state = strip(to_text(state)) + "\\n\\n" + strip(to_text(instructions)) (either alone when the
  other is empty); choice = to_text(description), the option name when it is null or ""; score =
  to_text(level); noul = "<side>: " + (to_text(description) | "Yes. This is true: "/"No. This is
  false: " + instructions | "<side>"); to_text renders objects as "key: value" fields (blank line
  between top-level fields, two spaces per nesting level) and arrays as "- item" lines;
- embedding: tokenizer(text) ids (+ append_token when s1serve.json sets one), Qwen3's final-norm
  hidden state at the last token in fp32, divided by its L2 norm;
- heads: the torch state dicts of the .pt (or, without --pt, the converted safetensors) in a
  torch module of heads.py's shape, fp32; projections L2-normalised; cos = za @ zq in fp32;
  logits = (scale * cos / T).tolist(); softmax in float64; choice = first argmax; confidence =
  p_max - mean(rest) clamped to [0, 1] (1 for one option); noul = p(true); score = sum(i p_i);
- input_tokens = the questions' state token lists' longest common prefix (shorter than each) once,
  plus every state's remaining tokens, plus the tokens of each distinct candidate text.

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per question instead: {"request", "question", "state_text", "state_ids",
"candidate_texts", "candidate_ids"}.

Usage: python3 tools/reference/clm_contract.py --model-dir DIR [--pt HEADS.pt] [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from answer_maths import shared_prefix_length  # noqa: E402

HEADS = ("state_head", "action_head")


def py_str_number(value) -> str:
    return str(value)


def to_text(value, indent: int = 0) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return py_str_number(value)
    pad = " " * indent
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                parts.append(f"{pad}{key}:\n{to_text(item, indent + 2)}")
            else:
                parts.append(f"{pad}{key}: {to_text(item)}")
        return ("\n\n" if indent == 0 else "\n").join(parts)
    parts = []
    for item in value:
        if isinstance(item, (dict, list)) and item:
            parts.append(f"{pad}-\n{to_text(item, indent + 2)}")
        else:
            parts.append(f"{pad}- {to_text(item)}")
    return "\n".join(parts)


def state_text(state, instructions) -> str:
    context, question = to_text(state).strip(), to_text(instructions).strip()
    if context and question:
        return f"{context}\n\n{question}"
    return context or question


def absent(description) -> bool:
    return description is None or description == ""


def candidates(question: dict) -> tuple[list[str], list[str]]:
    """Keys and texts in s1serve's label order (noul: true first)."""
    kind, criteria = question["type"], question.get("criteria")
    if kind == "choice":
        keys = list(criteria)
        return keys, [key if absent(criteria[key]) else to_text(criteria[key]) for key in keys]
    if kind == "score":
        return [str(i) for i in range(len(criteria))], [to_text(level) for level in criteria]
    instructions = to_text(question.get("instructions")).strip()
    texts = []
    for side, default in (("true", "Yes. This is true: "), ("false", "No. This is false: ")):
        described = (criteria or {}).get(side)
        body = to_text(described) if not absent(described) else (default + instructions if instructions else side)
        texts.append(f"{side}: {body}")
    return ["true", "false"], texts


def make_head(tensors: dict, residual: bool):
    """A torch module of heads.py's shape, built from <parameter> -> tensor."""
    import torch

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            width, hidden = tensors["inp.weight"].shape
            blocks = len({k.split(".")[1] for k in tensors if k.startswith("hidden.")})
            self.inp = torch.nn.Linear(hidden, width)
            self.hidden = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(blocks))
            layernorm = "norms.0.weight" in tensors
            self.norms = torch.nn.ModuleList(
                (torch.nn.LayerNorm(width) if layernorm else torch.nn.Identity()) for _ in range(blocks))
            self.out = torch.nn.Linear(width, tensors["out.weight"].shape[0])

        def forward(self, x):
            x = torch.nn.functional.gelu(self.inp(x))
            for linear, norm in zip(self.hidden, self.norms):
                h = torch.nn.functional.gelu(norm(linear(x)))
                x = x + h if residual else h
            return self.out(x)

    head = Head()
    head.load_state_dict({k: v.float() for k, v in tensors.items()})
    return head.eval()


class ClmReference:
    def __init__(self, model_dir: str, pt: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        with open(os.path.join(model_dir, "s1serve.json"), encoding="utf-8") as f:
            self.settings = json.load(f)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        residual = bool(self.settings.get("head_residual", False))
        if pt:
            checkpoint = torch.load(pt, map_location="cpu", weights_only=False)
            parts = {head: checkpoint[head] for head in HEADS}
            logit_scale = torch.as_tensor(checkpoint["logit_scale"]).float()
        else:
            from safetensors.torch import load_file

            flat = load_file(os.path.join(model_dir, self.settings.get("heads_file", "clm_heads.safetensors")))
            parts = {head: {k[len(head) + 1:]: v for k, v in flat.items() if k.startswith(head + ".")}
                     for head in HEADS}
            logit_scale = torch.tensor(float(self.settings["logit_scale"]))
        self.state_head = make_head(parts["state_head"], residual)
        self.action_head = make_head(parts["action_head"], residual)
        self.scale = float(logit_scale.exp().clamp(max=float(self.settings.get("max_scale", 100.0))))
        self.temperature = float(self.settings.get("temperature", 1.0))
        append = self.settings.get("append_token")
        self.append_id = self.tokenizer.convert_tokens_to_ids(append) if append else None

    def ids(self, text: str) -> list[int]:
        ids = self.tokenizer(text)["input_ids"]
        return ids + [self.append_id] if self.append_id is not None else ids

    def embed(self, texts: list[str]):
        import torch

        rows = []
        with torch.no_grad():
            for text in texts:
                hidden = self.model.model(input_ids=torch.tensor([self.ids(text)])).last_hidden_state[0, -1]
                rows.append(hidden / hidden.norm())
        return torch.stack(rows)

    def prompts(self, request: dict):
        for key, question in request["questions"].items():
            text = state_text(request["state"], question.get("instructions"))
            _, texts = candidates(question)
            yield key, text, texts

    def decide(self, request: dict) -> dict:
        import torch

        answers, states, distinct = {}, [], {}
        for _, text, texts in self.prompts(request):
            states.append(self.ids(text))
            for t in texts:
                distinct.setdefault(t, len(distinct))
        prefix = shared_prefix_length(states, 1)
        input_tokens = prefix + sum(len(s) - prefix for s in states) + sum(len(self.ids(t)) for t in distinct)
        with torch.no_grad():
            zq = torch.nn.functional.normalize(
                self.state_head(self.embed([t for _, t, _ in self.prompts(request)])), dim=-1)
            za = torch.nn.functional.normalize(self.action_head(self.embed(list(distinct))), dim=-1)
        for i, (key, _, texts) in enumerate(self.prompts(request)):
            question = request["questions"][key]
            rows = za[[distinct[t] for t in texts]]
            logits = (self.scale * (rows @ zq[i]) / self.temperature).tolist()
            answers[key] = answer(question, logits)
        return {"request": request, "answers": answers, "input_tokens": input_tokens}


def softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def confidence(p: list[float]) -> float:
    if len(p) < 2:
        return 1.0
    j = max(range(len(p)), key=lambda i: (p[i], -i))
    rest = sum(v for i, v in enumerate(p) if i != j) / (len(p) - 1)
    return min(max(p[j] - rest, 0.0), 1.0)


def answer(question: dict, logits: list[float]) -> dict:
    keys, _ = candidates(question)
    p = softmax(logits)
    if question["type"] == "noul":
        return {"type": "noul", "noul": p[0]}
    if question["type"] == "choice":
        j = max(range(len(p)), key=lambda i: (p[i], -i))
        return {"type": "choice", "choice": keys[j], "confidence": confidence(p),
                "probabilities": dict(zip(keys, p))}
    return {"type": "score", "score": sum(i * v for i, v in enumerate(p)), "confidence": confidence(p),
            "probabilities": dict(zip(keys, p))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--pt", help="the heads .pt (default: the converted safetensors of the model directory)")
    parser.add_argument("--prompts", action="store_true", help="write texts and token ids per question")
    args = parser.parse_args()
    reference = ClmReference(args.model_dir, args.pt)
    for number, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        request = json.loads(line)
        if args.prompts:
            for key, text, texts in reference.prompts(request):
                print(json.dumps({"request": number, "question": key, "state_text": text,
                                  "state_ids": reference.ids(text), "candidate_texts": texts,
                                  "candidate_ids": [reference.ids(t) for t in texts]}, ensure_ascii=False))
        else:
            print(json.dumps(reference.decide(request), ensure_ascii=False))


if __name__ == "__main__":
    main()
