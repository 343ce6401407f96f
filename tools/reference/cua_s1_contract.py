"""Python reference of s1serve's Cua-S1 4B 0.2 `text` contract (src/decide/contracts/cua_s1.h).

A fixture generator built on Transformers, never part of the serving path. It follows the pinned
upstream reference (trycua/cua 0e75660ce4c2edda519e0c795fa3ad98abf4e76f, libs/cua-s1 FourBModel:
SYSTEM_PROMPT and build_prompt) mapped onto /v1/systemone requests as ThinkFlowLab/system1-omni
src/models/cua_s1/text/contract.py maps them:

- system message: upstream's SYSTEM_PROMPT;
- user message: "Goal: <instructions>\\n\\n" (left out when the instructions are null, absent or
  render empty), "App: Cua Driver\\nTask family: closed-candidate decision\\n\\n",
  "Accessibility tree:\\n<state>\\n\\nOptions:\\n", one line per option
  '<letter>. Decision "<label>" -> select' joined by "\\n", then "\\n\\nAnswer with a single letter.";
  state and instructions are strings as-is, objects/arrays as json.dumps(value, ensure_ascii=False);
  an option label is json.dumps(name if value is None else text(value), ensure_ascii=False)[1:-1];
- tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) with no
  enable_thinking argument (the prompt ends "<|im_start|>assistant\\n<think>\\n"), then
  tokenizer(text) (Qwen adds no special tokens);
- letter ids = convert_tokens_to_ids(A..Z); the fp32 forward's last-position logits of the letters in
  use, rounded to BF16 (the reference's BF16 LM head; --no-bf16-logits keeps them), softmax in
  float64, choice = argmax (earliest wins ties), confidence = 1 - H(p)/ln n (1.0 for n = 1);
- input_tokens = the questions' longest common token prefix (shorter than every prompt, rounded down
  to 64 for the Qwen3.5 hybrid, else 1) counted once plus every prompt's remaining tokens.

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per question instead: {"request", "question", "text", "ids"}.

Usage: python3 tools/reference/cua_s1_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json

from answer_maths import choice_answer, shared_prefix_length, softmax
from decider_io import answer_stdin, question_prompt_lines

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# Upstream's SYSTEM_PROMPT, byte for byte (four_b.py at the pinned commit).
SYSTEM_PROMPT = (
    "You are a one-pass computer-use decision model. You are shown the "
    "current state of a screen and a fixed, closed list of candidate "
    "(element, action) options, each given a single letter. Choose exactly "
    "one option: the single best next action to take. Answer with ONLY that "
    "option's letter -- no words, no punctuation, no explanation."
)


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def messages(state, question: dict) -> list[dict]:
    instructions = question.get("instructions")
    goal = "" if instructions is None else text(instructions)
    labels = [json.dumps(name if value is None else text(value), ensure_ascii=False)[1:-1]
              for name, value in question["criteria"].items()]
    options = "\n".join(f'{letter}. Decision "{label}" -> select' for letter, label in zip(LETTERS, labels))
    user = ((f"Goal: {goal}\n\n" if goal else "")
            + "App: Cua Driver\nTask family: closed-candidate decision\n\n"
            + f"Accessibility tree:\n{text(state)}\n\nOptions:\n{options}\n\nAnswer with a single letter.")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class CuaS1Decider:
    def __init__(self, model_dir: str, bf16_logits: bool = True):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.letter_ids = self.tokenizer.convert_tokens_to_ids(list(LETTERS))
        for letter, token in zip(LETTERS, self.letter_ids):
            if self.tokenizer.encode(letter, add_special_tokens=False) != [token]:
                raise ValueError(f"letter {letter!r} is not the single token {token}")
        self.bf16_logits = bf16_logits
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def prompt(self, state, question: dict) -> tuple[str, list[int]]:
        rendered = self.tokenizer.apply_chat_template(messages(state, question), tokenize=False,
                                                      add_generation_prompt=True)
        return rendered, self.tokenizer(rendered)["input_ids"]

    def decide(self, request: dict) -> dict:
        questions = request["questions"]
        prompts = [self.prompt(request["state"], q)[1] for q in questions.values()]
        prefix = shared_prefix_length(prompts, self.granularity)
        answers = {}
        with self.torch.no_grad():
            for (key, question), ids in zip(questions.items(), prompts):
                logits = self.model(self.torch.tensor([ids])).logits[0, -1]
                letters = logits[self.letter_ids[:len(question["criteria"])]]
                if self.bf16_logits:
                    letters = letters.to(self.torch.bfloat16)
                answers[key] = choice_answer(list(question["criteria"]), softmax([float(x) for x in letters]))
        return {"request": request, "answers": answers,
                "input_tokens": prefix + sum(len(p) - prefix for p in prompts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered prompts and token ids instead")
    parser.add_argument("--no-bf16-logits", action="store_true", help="keep the letter logits in fp32")
    args = parser.parse_args()
    decider = CuaS1Decider(args.model_dir, not args.no_bf16_logits)
    answer_stdin(decider.decide, lambda number, request: question_prompt_lines(number, request, decider.prompt), args.prompts)


if __name__ == "__main__":
    main()
