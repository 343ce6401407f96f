"""Python reference of s1serve's JEV-27B-VL contract (src/decide/contracts/jev_vl.h), text path.

A fixture generator built on Transformers, never part of the serving path. It follows autotrust/JEV-27B-VL
@ f34b598's serve_decide.py as ThinkFlowLab/system1-omni ports it (src/models/jev_vl/native/src/
{contract,executor,engine}.rs, recipe/jev_vl/export_merged.py), over the export's jev_vl_export.json and
label_head.safetensors, and maps System One questions onto its single-question schema:

- each question is one upstream request {kind, state, question, options}: kind = the question type;
  question = the instructions (a string as-is, null as "", anything else json.dumps(v, ensure_ascii=False));
  choice options = the option name, or "name: " + text(description); noul and score take upstream's fixed
  options ("false", "true"; "0".."5": a score question must have six levels, shown to the model as 0-5);
- state parts: a string as-is; an object json.dumps(v, ensure_ascii=False); an array part by part (a
  string as-is, {"type": "text", "text": t} as t, anything else json.dumps) joined with no separator;
- prompt = "[kind] " + kind + "\\n[state] " + state + "\\n[question] " + question + "\\n[options]\\n" +
  lines + "\\n[decision]:", lines = "<label>) <option>" per choice option (the export's label table) or the
  fixed options one per line; tokenised whole with no special tokens; over max_length: refused;
- readout: the fp32 forward's final-norm hidden state at the last token (model.model(...).last_hidden_state),
  z_i = (sum(float64(row_i) * float64(h)) + bias_i) / T_kind over the rows of label_head.safetensors:
  noul the verbalizer slots 0-1 (false, true), score slots 2-7, choice the label ids with slot 8 + i's
  bias for the first 16 options and 0 after; p = softmax(z) in float64;
- System One answers: choice = argmax (earliest wins ties) with the linear confidence; noul = p(true);
  score = sum(i * p_i) as the API defines it (upstream reports the argmax category, the mode of the same
  probabilities), confidence as the API's score confidence, probabilities per level;
- input_tokens as s1serve counts it: the longest common token prefix of the request's prompts (rounded
  down to 64 for the Qwen3.5 hybrid) once, plus every prompt's remaining tokens; "independent_tokens" is
  the reference's own count (every prompt whole).

Output, one line per request: {"request", "answers", "input_tokens", "independent_tokens"}; with
--prompts one line per question: {"request", "question", "text", "ids"}.

Usage: python3 tools/reference/jev_vl_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math

from answer_maths import shared_prefix_length
from decider_io import answer_stdin, question_prompt_lines

SCORE_LEVELS = 6


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def state_text(state) -> str:
    if isinstance(state, list):
        parts = []
        for part in state:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(part.get("text", ""))
            else:
                parts.append(text(part))
        return "".join(parts)
    return text(state)


def options(question: dict) -> list[str]:
    if question["type"] == "noul":
        return ["false", "true"]
    if question["type"] == "score":
        if len(question["criteria"]) != SCORE_LEVELS:
            raise ValueError("a score question needs six levels")
        return [str(i) for i in range(SCORE_LEVELS)]
    return [name if value is None else f"{name}: {text(value)}" for name, value in question["criteria"].items()]


class JevVlDecider:
    def __init__(self, model_dir: str):
        import numpy as np
        import torch
        from safetensors.numpy import load_file
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.np, self.torch = np, torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        with open(f"{model_dir}/jev_vl_export.json", encoding="utf-8") as f:
            self.export = json.load(f)
        if self.export["format"] != "jev-vl-text-merged/1":
            raise ValueError("not a JEV-27B-VL text export")
        head = load_file(f"{model_dir}/{self.export['label_head']['file']}")
        self.rows = {int(i): head["rows"][n].astype(np.float64) for n, i in enumerate(head["ids"])}
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def prompt(self, state, question: dict) -> tuple[str, list[int]]:
        instructions = question.get("instructions")
        instructions = "" if instructions is None else text(instructions)
        listed = options(question)
        if question["type"] == "choice":
            labels = self.export["labels"]
            if not 2 <= len(listed) <= len(labels):
                raise ValueError("choice needs 2 to len(labels) options")
            lines = [f"{labels[i]}) {o}" for i, o in enumerate(listed)]
        else:
            lines = listed
        prompt = (f"[kind] {question['type']}\n[state] {state_text(state)}\n[question] {instructions}\n"
                  f"[options]\n" + "\n".join(lines) + "\n[decision]:")
        ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        if len(ids) > self.export["max_length"]:
            raise ValueError("over max_length")
        return prompt, ids

    def readout(self, kind: str, count: int) -> tuple[list[int], list[float]]:
        verbalizer, bias = self.export["verbalizer_ids"], self.export["verbalizer_bias"]
        if kind == "noul":
            return verbalizer[0:2], bias[0:2]
        if kind == "score":
            return verbalizer[2:8], bias[2:8]
        return self.export["label_ids"][:count], [bias[8 + i] if i < 16 else 0.0 for i in range(count)]

    def probabilities(self, ids: list[int], kind: str, count: int) -> list[float]:
        np, torch = self.np, self.torch
        with torch.no_grad():
            hidden = self.model.model(torch.tensor([ids])).last_hidden_state[0, -1].numpy().astype(np.float64)
        tokens, bias = self.readout(kind, count)
        temperature = self.export["temperatures"][kind]
        z = [(float(np.dot(self.rows[t], hidden)) + b) / temperature for t, b in zip(tokens, bias)]
        top = max(z)
        w = [math.exp(v - top) for v in z]
        total = sum(w)
        return [v / total for v in w]

    def decide(self, request: dict) -> dict:
        answers, everything = {}, []
        for key, question in request["questions"].items():
            _, ids = self.prompt(request["state"], question)
            everything.append(ids)
            n = len(options(question))
            p = self.probabilities(ids, question["type"], n)
            mode = max(range(n), key=lambda i: (p[i], -i))
            if question["type"] == "noul":
                answers[key] = {"type": "noul", "noul": p[1]}
            elif question["type"] == "choice":
                names = list(question["criteria"])
                answers[key] = {"type": "choice", "choice": names[mode],
                                "confidence": max(0.0, (p[mode] - 1.0 / n) / (1.0 - 1.0 / n)),
                                "probabilities": dict(zip(names, p))}
            else:
                centre = (n - 1) / 2.0
                uniform = sum(abs(i - centre) for i in range(n)) / n
                distance = sum(abs(i - mode) * pi for i, pi in enumerate(p))
                answers[key] = {"type": "score", "score": sum(i * pi for i, pi in enumerate(p)),
                                "confidence": max(0.0, 1.0 - distance / uniform),
                                "legend": {str(i): level for i, level in enumerate(question["criteria"])},
                                "probabilities": {str(i): pi for i, pi in enumerate(p)}}
        prefix = shared_prefix_length(everything, self.granularity)
        return {"request": request, "answers": answers,
                "input_tokens": prefix + sum(len(s) - prefix for s in everything),
                "independent_tokens": sum(len(s) for s in everything)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered prompts and token ids instead")
    args = parser.parse_args()
    decider = JevVlDecider(args.model_dir)
    answer_stdin(decider.decide, lambda number, request: question_prompt_lines(number, request, decider.prompt),
                 args.prompts)


if __name__ == "__main__":
    main()
