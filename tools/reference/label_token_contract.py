"""Python reference of s1serve's label-token decision contract (src/decide/contracts/label_token.h).

A fixture generator built on Transformers, never part of the serving path. For a System One request:

- Per question, one user turn: text(state) + "\\n\\n" + the question block of the API contract's
  default prompt (section 5.3): optional "Question: <instructions>" line; choice "A: <name>" or
  "A: <name> - <description>" lines then "Answer with one letter."; score "0: <level>" lines then
  "Answer with one number."; noul optional "yes: <true>" / "no: <false>" lines then
  "Answer yes or no.". An optional system turn comes first.
- tokenizer.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False), then
  encode without added special tokens.
- Label tokens: A..Z, AA.. (single tokens only), digits 0-9, noul ["yes", "no"].
- s_i = logit of the label token at the last prompt position (fp32 forward), p = softmax(s / T) in
  float64, answers with the default (linear) confidence.
- input_tokens = the questions' longest common token prefix (kept shorter than every prompt,
  rounded down to the model's prefix granularity: 64 for the Qwen3.5 hybrid, else 1) counted once,
  plus every prompt's remaining tokens.

Usage: python3 tools/reference/label_token_contract.py --model-dir DIR < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from answer_maths import shared_prefix_length  # noqa: E402
from embedding_contract import choice_answer, noul_answer, render_text, score_answer  # noqa: E402


def letter_label(index: int) -> str:
    label = ""
    index += 1
    while index > 0:
        index, remainder = divmod(index - 1, 26)
        label = chr(ord("A") + remainder) + label
    return label


def question_block(question: dict) -> str:
    block = ""
    instructions = question.get("instructions")
    if instructions is not None:
        block += "Question: " + render_text(instructions) + "\n"
    kind = question["type"]
    criteria = question.get("criteria")
    if kind == "choice":
        for i, (name, description) in enumerate(criteria.items()):
            block += letter_label(i) + ": " + name
            if description is not None:
                block += " - " + render_text(description)
            block += "\n"
        block += "Answer with one letter."
    elif kind == "score":
        for i, level in enumerate(criteria):
            block += str(i) + ": " + render_text(level) + "\n"
        block += "Answer with one number."
    else:
        criteria = criteria or {}
        if "true" in criteria:
            block += "yes: " + render_text(criteria["true"]) + "\n"
        if "false" in criteria:
            block += "no: " + render_text(criteria["false"]) + "\n"
        block += "Answer yes or no."
    return block


def labels(question: dict) -> list[str]:
    if question["type"] == "choice":
        return [letter_label(i) for i in range(len(question["criteria"]))]
    if question["type"] == "score":
        return [str(i) for i in range(len(question["criteria"]))]
    return ["yes", "no"]


def softmax(scores: list[float], temperature: float) -> list[float]:
    logits = [s / temperature for s in scores]
    m = max(logits)
    exps = [math.exp(z - m) for z in logits]
    total = 0.0
    for e in exps:
        total += e
    return [min(1.0, max(0.0, e / total)) for e in exps]


class LabelTokenDecider:
    def __init__(self, model_dir: str, system_prompt: str | None = None, temperature: float = 1.0):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def prompt_ids(self, state, question: dict) -> list[int]:
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": render_text(state) + "\n\n" + question_block(question)})
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def label_id(self, label: str) -> int:
        ids = self.tokenizer(label, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError(f"label {label!r} is not a single token")
        return ids[0]

    def decide(self, request: dict) -> dict:
        questions = request["questions"]
        prompts = [self.prompt_ids(request["state"], q) for q in questions.values()]
        prefix = shared_prefix_length(prompts, self.granularity)
        input_tokens = prefix + sum(len(p) - prefix for p in prompts)
        answers = {}
        with self.torch.no_grad():
            for (key, question), ids in zip(questions.items(), prompts):
                logits = self.model(self.torch.tensor([ids])).logits[0, -1]
                scores = [float(logits[self.label_id(label)]) for label in labels(question)]
                probs = softmax(scores, self.temperature)
                if question["type"] == "choice":
                    answers[key] = choice_answer(list(question["criteria"].keys()), probs)
                elif question["type"] == "score":
                    answers[key] = score_answer(question["criteria"], probs)
                else:
                    answers[key] = noul_answer(probs)
        return {"answers": answers, "input_tokens": input_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--system-prompt")
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args()
    decider = LabelTokenDecider(args.model_dir, args.system_prompt, args.temperature)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(decider.decide(json.loads(line)), ensure_ascii=False))


if __name__ == "__main__":
    main()
