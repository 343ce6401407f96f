"""Python reference of s1serve's Open-Jev contract (src/decide/contracts/open_jev.h).

A fixture generator built on Transformers, never part of the serving path. It follows the pinned upstream
(Zefan-Cai/Open-Jev 3308a15 as ThinkFlowLab/system1-omni src/models/open_jev/native serves it: contract.rs,
processing.rs, executor.rs) and, like that reference, runs every candidate sequence on its own:

- text(v): a string as-is, anything else json.dumps(v, ensure_ascii=False, sort_keys=True);
- per question, context = "Context:\\n" + text(state) + "\\n\\nQuestion: " + instructions + "\\n", where
  instructions = text(instructions) ("" when absent or null), plus for noul "\\nYes means: " + text(true)
  and "\\nNo means: " + text(false) for each side the criteria give;
- choice (option `name`, or `name: text(description)`) and score (text(level)): one sequence per
  candidate, context + "Proposed answer: " + option + "\\nIs this proposed answer correct? Answer Yes or No.";
  noul: one sequence, context + "Is the answer to this question yes? Answer Yes or No.";
- each sequence = chat_prefix + body.strip() + chat_suffix from open_jev_export.json, tokenised whole
  with tokenizer(text) (Qwen adds no special tokens); longer than max_length: refused;
- the fp32 forward's final-norm hidden state at the last token (model.model(...).last_hidden_state),
  s = float32(sum(float64(w) * float64(h))) + float32(bias);
- logits per question (noul: [0, s] as false, true), softmax((l - max) / T) in float64 over all of the
  question's candidates; choice = argmax (earliest wins ties), confidence (p - 1/n) / (1 - 1/n) (1.0 for
  n = 1); score = sum(i * p_i), confidence max(0, 1 - E|i - mode| / E_uniform|i - mode|); noul = p(true);
- input_tokens as s1serve counts it: the longest common token prefix of all of the request's candidate
  sequences (shorter than every sequence, rounded down to 64 for the Qwen3.5 hybrid) once, plus every
  sequence's remaining tokens. "independent_tokens" is the reference's own count (every sequence whole).

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N, "independent_tokens": M}
With --prompts, one line per question instead: {"request", "question", "texts", "ids"}.

Usage: python3 tools/reference/open_jev_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math

from answer_maths import shared_prefix_length
from decider_io import answer_stdin, question_prompt_lines


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def bodies(state, question: dict) -> list[str]:
    instructions = question.get("instructions")
    instructions = "" if instructions is None else text(instructions)
    criteria = question.get("criteria")
    if question["type"] == "noul" and criteria:
        if "true" in criteria:
            instructions += "\nYes means: " + text(criteria["true"])
        if "false" in criteria:
            instructions += "\nNo means: " + text(criteria["false"])
    context = f"Context:\n{text(state)}\n\nQuestion: {instructions}\n"
    if question["type"] == "noul":
        return [context + "Is the answer to this question yes? Answer Yes or No."]
    if question["type"] == "choice":
        options = [name if value is None else f"{name}: {text(value)}" for name, value in criteria.items()]
    else:
        options = [text(level) for level in criteria]
    return [f"{context}Proposed answer: {option}\nIs this proposed answer correct? Answer Yes or No."
            for option in options]


def answer(kind: str, names: list[str], logits: list[float], temperature: float) -> dict:
    top = max(logits)
    exps = [math.exp((v - top) / temperature) for v in logits]
    total = sum(exps)
    p = [min(1.0, max(0.0, e / total)) for e in exps]
    if kind == "noul":
        return {"type": "noul", "noul": p[1]}
    n = len(p)
    mode = max(range(n), key=lambda i: (p[i], -i))
    if kind == "choice":
        confidence = 1.0 if n == 1 else min(1.0, max(0.0, (p[mode] - 1.0 / n) / (1.0 - 1.0 / n)))
        return {"type": "choice", "choice": names[mode], "confidence": confidence,
                "probabilities": dict(zip(names, p))}
    score = sum(i * pi for i, pi in enumerate(p))
    centre = (n - 1) / 2.0
    uniform = sum(abs(i - centre) for i in range(n)) / n
    distance = sum(abs(i - mode) * pi for i, pi in enumerate(p))
    return {"type": "score", "score": score, "confidence": max(0.0, 1.0 - distance / uniform),
            "legend": {str(i): level for i, level in enumerate(names)},
            "probabilities": {str(i): pi for i, pi in enumerate(p)}}


class OpenJevDecider:
    def __init__(self, model_dir: str):
        import numpy as np
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.np, self.torch = np, torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        with open(f"{model_dir}/open_jev_export.json", encoding="utf-8") as f:
            export = json.load(f)
        if export["format"] != "open-jev-text-merged/1":
            raise ValueError("not an Open-Jev merged text export")
        self.export = export
        self.weight = np.array([np.float32(w) for w in export["head_weight"]], dtype=np.float32)
        self.bias = np.float32(export["head_bias"])
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def sequences(self, state, question: dict) -> tuple[list[str], list[list[int]]]:
        texts = [self.export["chat_prefix"] + body.strip() + self.export["chat_suffix"]
                 for body in bodies(state, question)]
        return texts, [self.tokenizer(t)["input_ids"] for t in texts]

    def head(self, ids: list[int]) -> float:
        with self.torch.no_grad():
            hidden = self.model.model(self.torch.tensor([ids])).last_hidden_state[0, -1].numpy()
        total = float(self.np.dot(self.weight.astype(self.np.float64), hidden.astype(self.np.float64)))
        return float(self.np.float32(total) + self.bias)

    def decide(self, request: dict) -> dict:
        answers, everything = {}, []
        for key, question in request["questions"].items():
            _, ids = self.sequences(request["state"], question)
            for sequence in ids:
                if len(sequence) > self.export["max_length"]:
                    raise ValueError(f"{key}: {len(sequence)} tokens exceed max_length")
            everything += ids
            scores = [self.head(sequence) for sequence in ids]
            if question["type"] == "noul":
                answers[key] = answer("noul", [], [0.0, scores[0]], self.export["temperature"])
            elif question["type"] == "choice":
                answers[key] = answer("choice", list(question["criteria"]), scores, self.export["temperature"])
            else:
                answers[key] = answer("score", list(question["criteria"]), scores, self.export["temperature"])
        prefix = shared_prefix_length(everything, self.granularity)
        return {"request": request, "answers": answers,
                "input_tokens": prefix + sum(len(s) - prefix for s in everything),
                "independent_tokens": sum(len(s) for s in everything)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered sequences and token ids instead")
    args = parser.parse_args()
    decider = OpenJevDecider(args.model_dir)
    answer_stdin(decider.decide, lambda number, request: question_prompt_lines(number, request, decider.sequences, "texts"), args.prompts)


if __name__ == "__main__":
    main()
