"""Python reference of s1serve's StartLux-Decision v1.1 4B Instant contract (src/decide/contracts/startlux.h).

A fixture generator built on Transformers, never part of the serving path. It restates the rules of
the StartLux-Decision package (StartLuxLabs/StartLux-Decision startlux_decision/model.py; the jevfmt
renderer it imports, render version jev_render_v3, read at Dilrevx/StartLux-Decision
startlux_decision/jevfmt.py) for /v1/systemone requests:

- system message: "Apply the criterion to the evidence. Choose exactly one listed option. Answer with
  its letter only."; user message: "Evidence:\\n<state>\\n\\nQuestion: <instructions>\\nOptions:\\n" and one
  "<letter>) <body>" line per option, joined by "\\n";
- state: a string as-is ("(none)" when blank), else json.dumps(ensure_ascii=False) after arrays of 8 or
  more items are annotated with "_index"; instructions and option texts: strings stripped, others
  json.dumps(ensure_ascii=False) stripped, blank means none; noul without instructions asks "Which
  answer fits the evidence?";
- options: choice criteria in request order; noul true ("yes") then false ("no"); score levels "0".."n-1";
  a body is the id when the text is missing or equal to the id after normalising (whitespace, "_" and
  "-" runs to one space, strip, lower), else "<id>: <text>"; choice ids that all look like bare letters
  or numbers are replaced by their texts when every option has one;
- tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
  enable_thinking=False) (ends "<think>\\n\\n</think>\\n\\n"), encoded without special tokens;
- readout: the fp32 forward's last-position logits of decision_config.json's letter_token_ids for the
  listed options, divided by temperature_by_type[type], softmax in float64; choice = first argmax,
  confidence (n·p_max − 1)/(n − 1) clipped to [0, 1] (1 for one option); score = Σ i·p_i, confidence
  1 − Σ p_i|i − mode| / mean_i |i − (n−1)/2| floored at 0; noul = p(true). A choice with one option is
  rendered, run and counted as the API asks (the package answers it without the model; the answer,
  p = 1 and confidence 1, is the same);
- wide choice (more than 26 options): ceil(n/group) near-equal groups, each asked as a question; the
  `keep` most probable of each group (ties in group order) go to a final round in group order, most
  probable first; a final round over more than 26 options is itself a wide choice; finalists get
  final·(1 − residual), the others residual·p_group/Σ p_group of the others, then everything is divided by
  its sum;
- input_tokens (s1serve's accounting): the longest common token prefix of the first-round prompts and of
  each wide question's prompt with no option lines (shorter than every one of them, rounded down to 64
  for the Qwen3.5 hybrid) counted once, plus every first-round prompt's remaining tokens; later
  wide-choice rounds are not counted (the API fixes the count before inference).

Every prompt runs whole here (no shared prefix), so the fixtures also check s1serve's branching.

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per first-round prompt instead: {"request", "question", "row", "text", "ids"}.

Usage: python3 tools/reference/startlux_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re

from answer_maths import shared_prefix_length
from decider_io import answer_stdin

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SYSTEM = "Apply the criterion to the evidence. Choose exactly one listed option. Answer with its letter only."
NOUL_INSTRUCTIONS = "Which answer fits the evidence?"
THINK_OFF = "<think>\n\n</think>\n\n"
BARE_ID = re.compile(r"^(?:\(?[A-Za-z][\).]?|\(?\d{1,3}[\).]?|option[_ ]?\d{1,3}|opt[_ ]?\d{1,3})$", re.I)


def annotated(value):
    if isinstance(value, list):
        if len(value) < 8:
            return [annotated(item) for item in value]
        out = []
        for i, item in enumerate(value):
            entry = {"_index": i}
            if isinstance(item, dict):
                for key, member in item.items():
                    entry[key] = annotated(member)
            else:
                entry["value"] = annotated(item)
            out.append(entry)
        return out
    if isinstance(value, dict):
        return {key: annotated(member) for key, member in value.items()}
    return value


def state_text(state) -> str:
    if isinstance(state, str):
        return state
    if state in (None, {}, []):
        return ""
    return json.dumps(annotated(state), ensure_ascii=False)


def value_text(value):
    if value is None:
        return None
    text = (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).strip()
    return text or None


def normalised(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text).strip().lower()


def record(question: dict) -> dict:
    """(type, instructions, [(id, text)]) of one /v1/systemone question."""
    kind = question["type"]
    instructions = value_text(question.get("instructions")) or ""
    criteria = question.get("criteria")
    if kind == "choice":
        options = [(name, value_text(text)) for name, text in criteria.items()]
    elif kind == "score":
        options = [(str(i), value_text(level)) for i, level in enumerate(criteria)]
    else:
        criteria = criteria or {}
        options = [("true", value_text(criteria.get("true"))), ("false", value_text(criteria.get("false")))]
        instructions = instructions or NOUL_INSTRUCTIONS
    return {"type": kind, "instructions": instructions, "options": options}


def user_message(state: str, row: dict, order: list[int]) -> str:
    kind, options = row["type"], row["options"]
    hide = kind == "choice" and all(BARE_ID.match(options[i][0]) for i in order) and all(options[i][1] for i in order)
    lines = []
    for k, i in enumerate(order):
        name, text = options[i]
        if kind == "noul":
            name = "yes" if name == "true" else "no"
        if hide:
            body = text
        elif text is None or not text.strip() or normalised(text) == normalised(name):
            body = name
        else:
            body = f"{name}: {text}"
        lines.append(f"{LETTERS[k]}) {body}")
    evidence = state if state.strip() else "(none)"
    return ("Evidence:\n" + evidence + "\n\nQuestion: " + row["instructions"].strip() + "\nOptions:\n"
            + "\n".join(lines))


def groups_of(items: list, size: int) -> list[list]:
    count = -(-len(items) // size)
    base, longer = divmod(len(items), count)
    out, start = [], 0
    for g in range(count):
        end = start + base + (1 if g < longer else 0)
        out.append(items[start:end])
        start = end
    return out


def softmax(scores: list[float], temperature: float) -> list[float]:
    top = max(scores)
    exps = [math.exp((s - top) / temperature) for s in scores]
    total = sum(exps)
    return [min(1.0, max(0.0, e / total)) for e in exps]


def choice_confidence(p: list[float]) -> float:
    n = len(p)
    return 1.0 if n < 2 else min(1.0, max(0.0, (n * max(p) - 1) / (n - 1)))


def score_confidence(p: list[float]) -> float:
    n = len(p)
    mode = max(range(n), key=lambda i: (p[i], -i))
    spread = sum(v * abs(i - mode) for i, v in enumerate(p))
    even = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return min(1.0, max(0.0, 1 - spread / even))


class StartLuxDecider:
    def __init__(self, model_dir: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        with open(os.path.join(model_dir, "decision_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        self.letter_ids = config["letter_token_ids"]
        self.temperature = config["temperature_by_type"]
        wide = config.get("wide_choice", {})
        self.group, self.keep, self.residual = wide.get("group", 25), wide.get("keep", 3), wide.get("residual", 1e-3)
        for letter, token in zip(LETTERS, self.letter_ids):
            if self.tokenizer.encode(letter, add_special_tokens=False) != [token]:
                raise ValueError(f"letter {letter!r} is not the single token {token}")
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def prompt(self, state: str, row: dict, order: list[int]) -> tuple[str, list[int]]:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user_message(state, row, order)}]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                  enable_thinking=False)
        if not text.endswith(THINK_OFF):
            raise ValueError("the chat template has no thinking-off prefix")
        return text, self.tokenizer.encode(text, add_special_tokens=False)

    def probabilities(self, state: str, row: dict, order: list[int]) -> list[float]:
        _, ids = self.prompt(state, row, order)
        with self.torch.no_grad():
            logits = self.model(self.torch.tensor([ids])).logits[0, -1]
        letters = [float(logits[t]) for t in self.letter_ids[:len(order)]]
        return softmax(letters, float(self.temperature[row["type"]]))

    def wide(self, state: str, row: dict, items: list[int]) -> dict[int, float]:
        """Probability per option index of `items` (more than 26 of them)."""
        groups = groups_of(items, self.group)
        first, finalists = {}, []
        for group in groups:
            p = self.probabilities(state, row, group)
            first.update(zip(group, p))
            ranked = sorted(range(len(group)), key=lambda i: -p[i])
            finalists += [group[i] for i in ranked[:self.keep]]
        if len(finalists) > len(LETTERS):
            final = self.wide(state, row, finalists)
        else:
            final = dict(zip(finalists, self.probabilities(state, row, finalists)))
        rest = [i for i in items if i not in set(finalists)]
        mass = sum(first[i] for i in rest) or 1.0
        combined = {i: final[i] * (1 - self.residual) for i in finalists}
        combined.update({i: self.residual * first[i] / mass for i in rest})
        total = sum(combined.values())
        return {i: v / total for i, v in combined.items()}

    def first_round(self, state: str, row: dict) -> list[list[int]]:
        """The option orders of a question's first-round prompts."""
        n = len(row["options"])
        if n > len(LETTERS):
            return groups_of(list(range(n)), self.group)
        return [list(range(n))]

    def decide(self, request: dict) -> dict:
        state = state_text(request["state"])
        answers, prompts, heads = {}, [], []
        for key, question in request["questions"].items():
            row = record(question)
            prompts += [self.prompt(state, row, order)[1] for order in self.first_round(state, row)]
            n = len(row["options"])
            names = [name for name, _ in row["options"]]
            if n > len(LETTERS):
                heads.append(self.prompt(state, row, [])[1])
                by_index = self.wide(state, row, list(range(n)))
                p = [by_index[i] for i in range(n)]
                best = max(range(n), key=lambda i: (p[i], -i))
                answers[key] = {"type": "choice", "choice": names[best], "confidence": choice_confidence(p),
                                "probabilities": dict(zip(names, p))}
            else:
                p = self.probabilities(state, row, list(range(n)))
                if row["type"] == "noul":
                    answers[key] = {"type": "noul", "noul": p[0]}
                elif row["type"] == "score":
                    answers[key] = {"type": "score", "score": sum(i * v for i, v in enumerate(p)),
                                    "confidence": score_confidence(p),
                                    "legend": {str(i): level for i, level in enumerate(question["criteria"])},
                                    "probabilities": {str(i): v for i, v in enumerate(p)}}
                else:
                    best = max(range(n), key=lambda i: (p[i], -i))
                    answers[key] = {"type": "choice", "choice": names[best], "confidence": choice_confidence(p),
                                    "probabilities": dict(zip(names, p))}
        tokens = 0
        if prompts:
            prefix = shared_prefix_length(prompts + heads, self.granularity)
            tokens = prefix + sum(len(p) - prefix for p in prompts)
        return {"request": request, "answers": answers, "input_tokens": tokens}

    def prompt_lines(self, number: int, request: dict):
        state = state_text(request["state"])
        for key, question in request["questions"].items():
            row = record(question)
            for order in self.first_round(state, row):
                text, ids = self.prompt(state, row, order)
                yield {"request": number, "question": key, "row": order, "text": text, "ids": ids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print the first-round prompts and token ids instead")
    args = parser.parse_args()
    decider = StartLuxDecider(args.model_dir)
    answer_stdin(decider.decide, decider.prompt_lines, args.prompts)


if __name__ == "__main__":
    main()
