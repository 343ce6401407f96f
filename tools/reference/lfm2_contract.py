"""Python reference of s1serve's LFM2.5-350M candidate-likelihood contract
(src/decide/contracts/lfm2_candidates.h).

A fixture generator built on Transformers, never part of the serving path. It follows the reference
worker ThinkFlowLab/system1-omni src/models/lfm2/{engine.py,worker.py} (adapted there from
notnotsamuel/LFM2.5-350M-RLCD @ deb589d8):

- schema per question: {"type": "object", "properties": {"answer": {"type": "string",
  "description": json.dumps({"instructions": …, "criteria": …}, ensure_ascii=False),
  "enum": [criteria keys]}}, "required": ["answer"], "additionalProperties": false};
- system message: the fixed extraction instruction, "\\n", json.dumps(schema, ensure_ascii=False);
  user message: the state (a string as-is; s1serve also takes objects and arrays, written as
  json.dumps(value, ensure_ascii=False): the reference worker accepts strings only);
- prefix = apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + "{\\n",
  encoded without special tokens;
- per candidate: suffix = encode('  "answer": '), value = encode(json.dumps(key, ensure_ascii=False)
  + "\\n"), each encoded on its own; the score is the sum over the value tokens of the fp32
  log-softmax over the whole vocabulary (no length normalisation);
- softmax across candidates in float64, choice = argmax (earliest wins ties), confidence =
  1 - H(p)/ln n (1.0 for n = 1);
- input_tokens = per question, its prefix once plus every candidate's suffix and value tokens.

Unlike the reference engine (one prefill, the cache forked per candidate batch), every candidate is
scored here by a full forward of prefix + suffix + value: the uncached oracle s1serve's forked
prefix must reproduce.

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per question: {"request", "question", "text", "ids", "suffix", "values"}.

Usage: python3 tools/reference/lfm2_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys

from answer_maths import choice_answer, softmax

# engine.py's system message before the schema, byte for byte.
INSTRUCTION = ("Extract the attributes from the text. Return only a JSON object matching this schema. "
               "Use the exact allowed values. No explanation or markdown.\n")
FIELD = "answer"


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def schema(question: dict) -> dict:
    criteria = question["criteria"]
    description = json.dumps({"instructions": question.get("instructions"), "criteria": criteria},
                             ensure_ascii=False)
    return {"type": "object",
            "properties": {FIELD: {"type": "string", "description": description, "enum": list(criteria.keys())}},
            "required": [FIELD], "additionalProperties": False}


def messages(state, question: dict) -> list[dict]:
    return [{"role": "system", "content": INSTRUCTION + json.dumps(schema(question), ensure_ascii=False)},
            {"role": "user", "content": text(state)}]


class Lfm2Decider:
    def __init__(self, model_dir: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()

    def encode(self, value: str) -> list[int]:
        return self.tokenizer.encode(value, add_special_tokens=False)

    def prompt(self, state, question: dict) -> tuple[str, list[int], list[int], list[list[int]]]:
        rendered = self.tokenizer.apply_chat_template(messages(state, question), tokenize=False,
                                                      add_generation_prompt=True) + "{\n"
        suffix = self.encode("  " + json.dumps(FIELD, ensure_ascii=False) + ": ")
        values = [self.encode(json.dumps(key, ensure_ascii=False) + "\n") for key in question["criteria"]]
        return rendered, self.encode(rendered), suffix, values

    def log_likelihood(self, prefix: list[int], suffix: list[int], value: list[int]) -> float:
        ids = prefix + suffix + value
        logits = self.model(self.torch.tensor([ids])).logits[0].float()
        start = len(prefix) + len(suffix)
        log_probs = logits[start - 1:start - 1 + len(value)].log_softmax(-1)
        return float(log_probs.gather(1, self.torch.tensor(value)[:, None]).sum())

    def decide(self, request: dict) -> dict:
        answers = {}
        input_tokens = 0
        with self.torch.no_grad():
            for key, question in request["questions"].items():
                _, prefix, suffix, values = self.prompt(request["state"], question)
                scores = [self.log_likelihood(prefix, suffix, value) for value in values]
                answers[key] = choice_answer(list(question["criteria"]), softmax(scores))
                input_tokens += len(prefix) + sum(len(suffix) + len(value) for value in values)
        return {"request": request, "answers": answers, "input_tokens": input_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered prompts and token ids instead")
    args = parser.parse_args()
    decider = Lfm2Decider(args.model_dir)
    for number, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        request = json.loads(line)
        if args.prompts:
            for key, question in request["questions"].items():
                rendered, ids, suffix, values = decider.prompt(request["state"], question)
                print(json.dumps({"request": number, "question": key, "text": rendered, "ids": ids,
                                  "suffix": suffix, "values": values}, ensure_ascii=False))
        else:
            print(json.dumps(decider.decide(request), ensure_ascii=False))


if __name__ == "__main__":
    main()
