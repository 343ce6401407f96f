"""Python reference of s1serve's Decider-2B v11 contract (src/decide/contracts/decider.h).

A fixture generator built on Transformers, never part of the serving path. It follows the pinned
reference, Mapika/decider 50d0be0d (decider-ai 1.8.1): decider/systemone.py (render_state,
annotate_indices, render_question, isolated_rows, combine_isolated, format_answer, unique_tokens)
and decider/prompt.py / prompt_fast.py (label_table, context_ids, question_piece), as
ThinkFlowLab/system1-omni src/models/decider/native serves them on /v1/systemone:

- context ids = tokenizer("Context:\\n" + state)[:32768]; a string state as-is, else
  json.dumps(annotate_indices(state), ensure_ascii=False) (arrays of >= 8 elements get "_index");
- one row per choice/noul question, one yes/no row per score level; a row = context ids + the ids of
  "\\n\\nQuestion: <text>\\nOptions:" + "\\n(<L>) <option>"... + "\\nAnswer: (" (one string up to 10
  options; past 10: ids of the head, then per option ids("\\n(") + [label id] + ids(") <option>"),
  then ids("\\nAnswer: (")); no chat template, no special tokens added;
- labels: label_table(tokenizer) -- A..Z then the two-letter upper-case strings that are one token,
  the first 255 (for the real tokenizer these are the ids s1serve pins; for a stand-in they are
  written to its s1serve.json label_token_ids);
- readout: the fp32 forward's logits at the last position for the first n labels, rounded to BF16
  (the reference's BF16 head GEMM), softmax(z / T) in float64 with T = choice 1.164, noul 1.624,
  score 1.124 (System One computes probabilities in double; the reference does it in fp32);
- answers in System One's shapes without the reference's extra members (certainty, x_p_max,
  level_fit, fit_mass) and without rounding: choice TypeSafe confidence (n*p_max - 1)/(n - 1);
  noul = P(yes); score: fit_i = P(yes) of level i's row, p = fit / sum(fit), score = sum(i * p_i),
  TypeSafe score confidence;
- input_tokens = the rows' longest common prefix once plus every row's remaining tokens.

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per row instead: {"request", "question", "row", "text", "ids"}.

Usage: python3 tools/reference/decider_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import re
import string

from decider_io import answer_stdin

MAX_OPTIONS = 255
NARROW = 10
MAX_STATE_TOKENS = 32768
ANNOTATE_MIN = 8
TEMPERATURES = {"choice": 1.164, "noul": 1.624, "score": 1.124}
NOUL_WITHOUT_INSTRUCTIONS = "Which answer fits the context?"
ISOLATED = "{q}\nProposed answer: {level}\nDoes the proposed answer fit?"


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def annotate_indices(value):
    if isinstance(value, list):
        if len(value) >= ANNOTATE_MIN:
            return [{"_index": i, **annotate_indices(v)} if isinstance(v, dict)
                    else {"_index": i, "value": annotate_indices(v)} for i, v in enumerate(value)]
        return [annotate_indices(v) for v in value]
    if isinstance(value, dict):
        return {k: annotate_indices(v) for k, v in value.items()}
    return value


def render_state(state) -> str:
    return state if isinstance(state, str) else json.dumps(annotate_indices(state), ensure_ascii=False)


def strip_level_number(level: str) -> str:
    return re.sub(r"^\s*-?\d+\s*:\s*", "", level)


def blank(value) -> bool:
    return value is None or value == ""


def rows_of(question: dict) -> list[tuple[str, list[str]]]:
    """The reference's render_question + isolated_rows for a System One question (raises ValueError
    where the reference refuses it)."""
    kind = question["type"]
    criteria = question.get("criteria")
    instructions = question.get("instructions")
    if kind == "noul" and blank(instructions):
        if criteria is None or all(blank(criteria.get(k)) for k in ("true", "false")):
            raise ValueError("noul question without instructions: criteria must describe true or false")
        question_text = NOUL_WITHOUT_INSTRUCTIONS
    else:
        # System One cannot tell an absent from a null instructions member: both mean none, which the
        # reference refuses for choice and score ("question without instructions").
        question_text = "" if instructions is None else text(instructions)
    if not question_text:
        raise ValueError("question without instructions")
    if kind == "choice":
        if not 2 <= len(criteria) <= MAX_OPTIONS:
            raise ValueError("choice criteria: a map of 2..255 options")
        return [(question_text, [n if blank(d) else f"{n}: {text(d)}" for n, d in criteria.items()])]
    if kind == "noul":
        c = criteria or {}
        f, t = c.get("false"), c.get("true")
        return [(question_text, ["no" if blank(f) else f"no: {text(f)}", "yes" if blank(t) else f"yes: {text(t)}"])]
    return [(ISOLATED.format(q=question_text, level=strip_level_number(text(level))), ["no", "yes"])
            for level in criteria]


def label_table(tokenizer) -> tuple[list[str], list[int]]:
    """(label names, label token ids), the reference's rule."""
    upper = string.ascii_uppercase
    out = []
    for name in list(upper) + [a + b for a in upper for b in upper]:
        ids = tokenizer.encode(name, add_special_tokens=False)
        if len(ids) == 1:
            out.append((name, ids[0]))
        if len(out) == MAX_OPTIONS:
            break
    if len(out) != MAX_OPTIONS or len({i for _, i in out}) != MAX_OPTIONS:
        raise ValueError("the tokenizer cannot supply 255 single-token labels")
    return [n for n, _ in out], [i for _, i in out]


def question_piece(tokenizer, label_ids: list[int], question_text: str, options: list[str]) -> list[int]:
    head = f"\n\nQuestion: {question_text}\nOptions:"
    tail = "\nAnswer: ("
    encode = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    if len(options) <= NARROW:
        return encode(head + "".join(f"\n({string.ascii_uppercase[j]}) {o}" for j, o in enumerate(options)) + tail)
    ids = encode(head)
    for j, option in enumerate(options):
        ids += encode("\n(") + [label_ids[j]] + encode(f") {option}")
    return ids + encode(tail)


def unique_tokens(rows: list[list[int]]) -> int:
    if len(rows) < 2:
        return sum(len(r) for r in rows)
    common, shortest = 0, min(len(r) for r in rows)
    while common < shortest and all(r[common] == rows[0][common] for r in rows):
        common += 1
    return common + sum(len(r) - common for r in rows)


def softmax(scores: list[float], temperature: float) -> list[float]:
    m = max(scores)
    exps = [math.exp((s - m) / temperature) for s in scores]
    total = 0.0
    for e in exps:
        total += e
    return [min(1.0, max(0.0, e / total)) for e in exps]


def choice_confidence(p: list[float]) -> float:
    n = len(p)
    return min(1.0, max(0.0, (n * max(p) - 1) / (n - 1)))


def score_confidence(p: list[float]) -> float:
    n = len(p)
    mode = max(range(n), key=lambda i: (p[i], -i))
    spread = sum(x * abs(i - mode) for i, x in enumerate(p))
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return min(1.0, max(0.0, 1.0 - spread / uniform))


def answer(question: dict, row_logits: list[list[float]], temperatures: dict) -> dict:
    kind = question["type"]
    if kind == "noul":
        p = softmax(row_logits[0], temperatures["noul"])
        return {"type": "noul", "noul": p[1]}
    if kind == "choice":
        p = softmax(row_logits[0], temperatures["choice"])
        names = list(question["criteria"])
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        return {"type": "choice", "choice": names[best], "confidence": choice_confidence(p),
                "probabilities": dict(zip(names, p))}
    fits = [softmax(row, temperatures["score"])[1] for row in row_logits]
    mass = sum(fits) or 1e-9
    p = [f / mass for f in fits]
    return {"type": "score", "score": sum(i * x for i, x in enumerate(p)), "confidence": score_confidence(p),
            "legend": {str(i): level for i, level in enumerate(question["criteria"])},
            "probabilities": {str(i): x for i, x in enumerate(p)}}


class Decider:
    def __init__(self, model_dir: str, bf16_logits: bool = True, temperatures: dict | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.label_names, self.label_ids = label_table(self.tokenizer)
        self.bf16_logits = bf16_logits
        self.temperatures = temperatures or TEMPERATURES

    def rows(self, request: dict) -> list[tuple[str, str, list[int]]]:
        """(question key, row text after the context, row ids) for every row in order."""
        state = "Context:\n" + render_state(request["state"])
        context = self.tokenizer.encode(state, add_special_tokens=False)[:MAX_STATE_TOKENS]
        out = []
        for key, question in request["questions"].items():
            for question_text, options in rows_of(question):
                piece = question_piece(self.tokenizer, self.label_ids, question_text, options)
                rendered = (f"\n\nQuestion: {question_text}\nOptions:"
                            + "".join(f"\n({name}) {o}" for name, o in zip(self.label_names, options)) + "\nAnswer: (")
                out.append((key, state + rendered, context + piece))
        return out

    def decide(self, request: dict) -> dict:
        rows = self.rows(request)
        logits = {}
        with self.torch.no_grad():
            for index, (key, _, ids) in enumerate(rows):
                count = len(rows_of(request["questions"][key])[0][1])
                last = self.model(self.torch.tensor([ids])).logits[0, -1]
                labels = last[self.label_ids[:count]]
                if self.bf16_logits:
                    labels = labels.to(self.torch.bfloat16)
                logits.setdefault(key, []).append([float(x) for x in labels])
        answers = {key: answer(q, logits[key], self.temperatures) for key, q in request["questions"].items()}
        return {"request": request, "answers": answers, "input_tokens": unique_tokens([ids for _, _, ids in rows])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print every row's text and token ids instead")
    parser.add_argument("--no-bf16-logits", action="store_true", help="keep the label logits in fp32")
    args = parser.parse_args()
    decider = Decider(args.model_dir, not args.no_bf16_logits)
    answer_stdin(decider.decide, lambda number, request: (
        {"request": number, "question": key, "row": row, "text": rendered, "ids": ids}
        for row, (key, rendered, ids) in enumerate(decider.rows(request))), args.prompts)


if __name__ == "__main__":
    main()
