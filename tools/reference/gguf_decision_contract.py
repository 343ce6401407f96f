#!/usr/bin/env python3
"""Python reference of the GGUF decision types s1serve serves (src/decide/gguf_decision.h), written
from llama.cpp's tools/server/server-decision.cpp (ggml-org/llama.cpp at
3cafcc83c182b8400043cb1fedb9550c148a64cf). A fixture generator built on Transformers, never part of
the serving path.

The GGUF gives the decision type (<arch>.decision.type), the temperatures
(<arch>.decision.temperature.*) and the prompt (the Jinja template tokenizer.chat_template.systemone);
the weights and tokenizer are those of the Hugging Face directory the GGUF was made from. Per
question and variant the template gets {id, type, instructions, state, options, images} (nimble:
also every question; lev: every object's keys sorted), the rendering is encoded with the special
tokens it spells, and label logits are read at the last position (fp32 forward):

- openjev: labels A..Z a..z; lev, nimble, pplx-decider: A..Z then AA..ZZ that are single tokens,
  given to the template as each option's "label"; lfm2-d1: label groups (prompt.py's codes), a
  group's score is its highest logit.
- noul options are [false, true], shown [true, false] by openjev and lfm2-d1; score options "0".."n-1".
- lev: a choice runs twice, the second time with its options reversed, softmaxes averaged; noul is
  read at labels A..I (ratings 0..8) as sum p_i * i / 8.
- p = softmax(s / T) in float64, T from the bucketed key, then the type's, else 1.

Usage: python3 tools/reference/gguf_decision_contract.py --gguf FILE --model-dir DIR < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from answer_maths import shared_prefix_length  # noqa: E402
from embedding_contract import choice_answer, score_answer  # noqa: E402

LEV_RATINGS = 9


def gguf_metadata(path: str) -> dict:
    import gguf

    reader = gguf.GGUFReader(path)
    values = {}
    for name, field in reader.fields.items():
        if field.types and field.types[0] == gguf.GGUFValueType.STRING:
            values[name] = bytes(field.parts[field.data[0]]).decode("utf-8")
        elif field.types and field.types[0] != gguf.GGUFValueType.ARRAY:
            values[name] = field.parts[field.data[0]][0].item()
    return values


def sort_keys(value):
    if isinstance(value, dict):
        return {key: sort_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sort_keys(item) for item in value]
    return value


class GgufDecisionReference:
    def __init__(self, gguf_path: str, model_dir: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils.chat_template_utils import _compile_jinja_template

        self.torch = torch
        meta = gguf_metadata(gguf_path)
        arch = meta["general.architecture"]
        self.type = meta[arch + ".decision.type"]
        prefix = arch + ".decision.temperature."
        self.temperatures = {k[len(prefix):]: float(v) for k, v in meta.items() if k.startswith(prefix)}
        self.template = _compile_jinja_template(meta["tokenizer.chat_template.systemone"])
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.labels, self.label_texts = [], []
        if self.type == "openjev":
            self.labels = [self.single(c) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"]
        elif self.type in ("lev", "nimble", "pplx-decider"):
            codes = [chr(a) for a in range(65, 91)] + [chr(a) + chr(b) for a in range(65, 91) for b in range(65, 91)]
            for code in codes:
                ids = self.encode(code)
                if len(ids) == 1 and len(self.labels) < 255:
                    self.labels.append(ids[0])
                    self.label_texts.append(code)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def single(self, text: str) -> int:
        ids = self.encode(text)
        assert len(ids) == 1, text
        return ids[0]

    def singles(self, forms: list[str]) -> list[int]:
        out = []
        for form in forms:
            ids = self.encode(form)
            if len(ids) == 1 and ids[0] not in out:
                out.append(ids[0])
        return out

    def options_of(self, question: dict) -> list[tuple[str, object]]:
        criteria = question.get("criteria")
        if question["type"] == "choice":
            return list(criteria.items())
        if question["type"] == "score":
            return [(str(i), level) for i, level in enumerate(criteria)]
        criteria = criteria or {}
        options = [("false", criteria.get("false")), ("true", criteria.get("true"))]
        return options[::-1] if self.type in ("openjev", "lfm2-d1") else options

    def d1_labels(self, kind: str, options) -> tuple[list[str], list[list[int]]]:
        texts, groups = [], []
        if kind != "choice":
            for key, _ in options:
                if kind == "score":
                    groups.append(self.singles([key]))
                else:
                    groups.append(self.singles(["yes", "Yes", "YES"] if key == "true" else ["no", "No", "NO"]))
                texts.append(key)
            return texts, groups
        n = len(options)
        letters = all(len(key) == 1 and key.isascii() and key.isalpha() for key, _ in options)
        pool = ([chr(c) for c in range(65, 91)] + ["%02d" % i for i in range(100)] + [chr(c) for c in range(97, 123)]
                + ["#%d" % i for i in range(200)] + [chr(a) + chr(b) for a in range(65, 91) for b in range(65, 91)])
        used = []

        def take(code):
            ids = self.encode(code)
            if len(ids) != 1 or ids[0] in used:
                return False
            used.append(ids[0])
            texts.append(code)
            groups.append([ids[0]] + [t for t in self.singles([" " + code]) if t != ids[0]])
            return True

        for i, (key, _) in enumerate(options):
            code = key if letters else (chr(65 + i) if n <= 26 else "%02d" % i)
            if not take(code) and not any(take(p) for p in pool):
                raise ValueError("no single-token label left")
        return texts, groups

    def shown(self, options, variant: int, texts: list[str]) -> list[dict]:
        order = options if variant == 0 else options[::-1]
        out = []
        for i, (key, description) in enumerate(order):
            option = {"key": key, "description": description}
            if self.label_texts:
                option["label"] = self.label_texts[i]
            if texts:
                option["label"] = texts[i]
            out.append(option)
        return out

    def temperature(self, kind: str, n: int) -> float:
        if self.type == "lev":
            bucket = "small" if n <= 8 else "mid" if n <= 26 else "large"
        else:
            bucket = "2" if n <= 2 else "3_5" if n <= 5 else "6_10" if n <= 10 else "11"
        for name in (kind + "." + bucket, kind):
            if name in self.temperatures:
                return self.temperatures[name]
        return 1.0

    def decide(self, request: dict) -> dict:
        questions = request["questions"]
        prompts, plans = [], []
        for key, question in questions.items():
            kind = question["type"]
            options = self.options_of(question)
            variants = 2 if self.type == "lev" and kind == "choice" and len(options) > 1 else 1
            readouts = []
            for variant in range(variants):
                texts, groups = self.d1_labels(kind, options) if self.type == "lfm2-d1" else ([], [])
                if not groups:
                    n_out = LEV_RATINGS if self.type == "lev" and kind == "noul" else len(options)
                    groups = [[label] for label in self.labels[:n_out]]
                variables = {"id": key, "type": kind, "instructions": question.get("instructions"),
                             "state": request["state"], "options": self.shown(options, variant, texts)}
                if self.type == "nimble":
                    variables["questions"] = [
                        {"id": k, "type": q["type"], "instructions": q.get("instructions"),
                         "options": self.shown(self.options_of(q), 0, [])} for k, q in questions.items()]
                if self.type == "lev":
                    variables = sort_keys(variables)
                variables["images"] = []
                text = self.template.render(**variables)
                prompts.append(self.encode(text))
                readouts.append(groups)
            plans.append((key, question, options, readouts))
        prefix = shared_prefix_length(prompts, 1)
        input_tokens = prefix + sum(len(p) - prefix for p in prompts)
        answers = {}
        index = 0
        with self.torch.no_grad():
            for key, question, options, readouts in plans:
                kind = question["type"]
                temperature = self.temperature(kind, len(options))
                probs = None
                for variant, groups in enumerate(readouts):
                    logits = self.model(self.torch.tensor([prompts[index]])).logits[0, -1]
                    index += 1
                    scores = [max(float(logits[t]) for t in group) for group in groups]
                    m = max(scores)
                    exps = [math.exp((s - m) / temperature) for s in scores]
                    total = sum(exps)
                    p = [e / total for e in exps]
                    if variant == 1:
                        p = p[::-1]
                    probs = p if probs is None else [(a + b) for a, b in zip(probs, p)]
                probs = [p / len(readouts) for p in probs]
                if kind == "choice":
                    answers[key] = choice_answer([k for k, _ in options], probs)
                elif kind == "score":
                    answers[key] = score_answer(question["criteria"], probs)
                elif self.type == "lev":
                    answers[key] = {"type": "noul", "noul": sum(p * i / (LEV_RATINGS - 1) for i, p in enumerate(probs))}
                else:
                    answers[key] = {"type": "noul", "noul": probs[[k for k, _ in options].index("true")]}
        return {"answers": answers, "input_tokens": input_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--model-dir", required=True)
    args = parser.parse_args()
    reference = GgufDecisionReference(args.gguf, args.model_dir)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(reference.decide(json.loads(line)), ensure_ascii=False))


if __name__ == "__main__":
    main()
