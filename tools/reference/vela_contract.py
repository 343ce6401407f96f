"""The Python reference for s1serve's vela-0.3b contract on a vela2-unified package directory.

    /work/.venv-ref/bin/python tools/reference/vela_contract.py tests/fixtures/tiny-vela

Reads <dir>/requests.jsonl (System One request bodies) and writes, per request:
  packing.jsonl   the (first) sequence's token ids, each question's [Q] position, option marker positions
                  ([ABS] last), real option count and pool range, the state tokens before/after the cut,
                  and the token ids of every sequence ("windows": one, or the windows over a cut part);
  heads.jsonl     the marker head's raw fp32 logits per question ([ABS] included);
  expected.jsonl  {"request", "answers", "input_tokens"} as the e2e tests and `s1serve validate` read them.

Independent of s1serve: HF `tokenizers` for text (the file's marker entries dropped, as vllm-sr's runtime
does), Transformers' ModernBertModel for the encoder, the marker head written out in torch from the
formula vllm-sr documents for its MarkerHead (heads/marker.py), float64 softmax and confidences.
The layout follows vllm-sr's encoder_layout.py (<bos> ([Q] q ([O] option)* [ABS]?)* [SEP_SCHEMA]
([SEG_role] part)* <eos>), its cut of over-long parts (layout.py fit, every part read) and its windows
over a cut part the questions read alone (a one-part state), logits averaged; the state mapping, option
spellings for noul/score and the confidences are s1serve's documented choices (docs/models/vela-2.0-0.3b.md).
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
from transformers import ModernBertConfig, ModernBertModel

ABSTAIN_TYPES = {"choice", "noul"}


def python_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


NOUL_DEFAULTS = ("No. The statement or question is not satisfied.", "Yes. The statement or question is satisfied.")


def named_options(question: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """(label names, (name, description) per option) as vllm-sr's request.py reads System One: choice its
    criteria (null: ""), noul no/yes with the criteria's false/true texts or the defaults, score the level
    texts with no description."""
    kind, criteria = question["type"], question.get("criteria")
    if kind == "choice":
        return list(criteria), [(k, "" if v is None else python_text(v)) for k, v in criteria.items()]
    if kind == "score":
        return [str(i) for i in range(len(criteria))], [(python_text(level), "") for level in criteria]
    criteria = criteria or {}
    return ["false", "true"], [(name, default if criteria.get(key) is None else python_text(criteria[key]))
                               for name, key, default in zip(("no", "yes"), ("false", "true"), NOUL_DEFAULTS)]


def options_of(question: dict) -> tuple[list[str], list[str]]:
    """(label names, option texts) in marker order: "name" or "name: description"."""
    names, options = named_options(question)
    return names, [name if not description else f"{name}: {description}" for name, description in options]


STATE_KEY_ROLES = {"request": "user", "user": "user", "prompt": "user", "source": "context", "context": "context",
                   "document": "context", "tools": "context", "previous_answer": "context", "answer": "answer",
                   "response": "answer"}


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def parts_of(state) -> list[tuple[str, str]]:
    """The typed parts as vllm-sr's request.py read_state makes them (its empty-part refusals aside)."""
    def content_text(value):
        return value if isinstance(value, str) else canonical(value)

    if isinstance(state, str) and state.strip().startswith("{"):
        try:
            decoded = json.loads(state.strip())
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            state = decoded
    if not isinstance(state, dict) or not state:
        return [("user", content_text(state))]
    by_role: dict[str, list[tuple[str, str, bool]]] = {}
    for key, value in state.items():
        role = STATE_KEY_ROLES.get(key.lower(), "context")
        by_role.setdefault(role, []).append((key, content_text(value), key.lower() in STATE_KEY_ROLES))
    parts = []
    for role in ("user", "context", "answer"):
        items = by_role.get(role)
        if not items:
            continue
        if len(items) == 1 and items[0][2]:
            parts.append((role, items[0][1]))
        else:
            parts.append((role, "\n\n".join(f"{key}:\n{value}" for key, value, _ in items)))
    return parts


def fit(lengths: list[int], fixed: int, room: int) -> list[int] | None:
    """vllm-sr's truncation (families/vela2/layout.py fit) when every question reads every part: each part
    in order cut by what is over, keeping a budget of at least one token; None when nothing fits."""
    budget = list(lengths)

    def over():
        return fixed + sum(budget) - room

    for i, length in enumerate(budget):
        if over() > 0:
            budget[i] = max(1, length - over())
    return None if over() > 0 else budget


def answer_of(temperature: dict, question: dict, logits: list[float]) -> dict:
    """A System One answer from one question's logits in option order (the first real_options are real;
    noul false then true) at the type's calibration.json temperature; what both Vela contracts answer."""
    real = torch.tensor(logits[: question["real_options"]], dtype=torch.float64)
    kind = question["type"]
    # A noul question is read as a two-option choice, at the choice temperature.
    p = torch.softmax(real / float(temperature.get("choice" if kind == "noul" else kind, 1.0)), dim=0).tolist()
    if kind == "noul":
        return {"type": "noul", "noul": p[1]}
    probabilities = dict(zip(question["names"], p))
    if kind == "choice":
        ranked = sorted(p, reverse=True)
        margin = 1.0 if len(p) == 1 else ranked[0] - ranked[1]
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        return {"type": "choice", "choice": question["names"][best], "confidence": margin,
                "probabilities": probabilities}
    mean = sum(i * q for i, q in enumerate(p))
    variance = sum(q * (i - mean) ** 2 for i, q in enumerate(p))
    confidence = min(1.0, max(0.0, 1.0 - variance / ((len(p) ** 2 - 1) / 12)))
    return {"type": "score", "score": mean, "confidence": confidence, "probabilities": probabilities}


class Reference:
    def __init__(self, directory: str):
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        with open(os.path.join(directory, "calibration.json"), encoding="utf-8") as f:
            self.temperature = json.load(f)["temperature"]
        with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
            spec = json.load(f)
        spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] not in self.config["markers"]]
        self.tokenizer = Tokenizer.from_str(json.dumps(spec))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        encoder_config = ModernBertConfig.from_dict(self.config["encoder_config"])
        encoder_config._attn_implementation = "eager"
        self.encoder = ModernBertModel(encoder_config).eval()
        tensors = load_file(os.path.join(directory, "model.safetensors"))
        self.encoder.load_state_dict({k[len("encoder."):]: v for k, v in tensors.items() if k.startswith("encoder.")},
                                     strict=True)
        self.head = {k: v for k, v in tensors.items() if not k.startswith("encoder.")}
        self.max_length = min(self.config["max_length"], encoder_config.max_position_embeddings)

    def tokens(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def pack(self, request: dict):
        markers = self.config["marker_ids"]
        ids = [self.config["bos_token_id"]]
        questions = []
        for key, question in request["questions"].items():
            names, texts = options_of(question)
            query = len(ids)
            ids.append(markers["[Q]"])
            instructions = question.get("instructions")
            ids += self.tokens("" if instructions is None else python_text(instructions))
            options = []
            for text in texts:
                options.append(len(ids))
                ids.append(markers["[O]"])
                ids += self.tokens(text)
            if question["type"] in ABSTAIN_TYPES:
                options.append(len(ids))
                ids.append(markers["[ABS]"])
            questions.append({"key": key, "type": question["type"], "names": names, "query": query,
                              "options": options, "real_options": len(texts)})
        ids.append(markers["[SEP_SCHEMA]"])
        parts = parts_of(request["state"])
        part_ids = [self.tokens(text) for _, text in parts]
        state_tokens = sum(len(p) for p in part_ids)
        budget = fit([len(p) for p in part_ids], len(ids) + len(parts) + 1, self.max_length)
        if budget is None:
            return None

        def assemble(texts):
            sequence = list(ids)
            pool_begin = len(sequence)
            for (role, _), tokens in zip(parts, texts):
                sequence.append(markers[f"[SEG_{role}]"])
                sequence += tokens
            pool = [pool_begin, len(sequence)]
            sequence.append(self.config["eos_token_id"])
            return {"ids": sequence, "questions": [dict(q, pool=pool) for q in questions],
                    "state_tokens": state_tokens, "state_tokens_kept": sum(len(t) for t in texts)}

        kept = [tokens[:keep] for tokens, keep in zip(part_ids, budget)]
        # encoder_layout.py: a cut part that every question reads alone is read in windows instead.
        if len(parts) != 1 or len(kept[0]) >= len(part_ids[0]):
            return [assemble(kept)]
        total, length = len(part_ids[0]), len(kept[0])
        overlap = min(self.config["window_overlap"], length // 4)
        stride = max(1, length - overlap)
        windows = []
        for start in range(0, max(1, total - overlap), stride):
            end = min(total, start + length)
            windows.append(assemble([part_ids[0][start:end]]))
            if end >= total:
                break
        return windows

    def logits(self, packed) -> list[list[float]]:
        with torch.no_grad():
            ids = torch.tensor([packed["ids"]])
            hidden = self.encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0].float()
            h = self.head

            def norm(x):
                return F.layer_norm(x, (x.shape[-1],), h["norm.weight"], h["norm.bias"], 1e-5)

            def linear(name, x):
                return F.linear(x, h[f"{name}.weight"], h[f"{name}.bias"])

            out = []
            for question in packed["questions"]:
                begin, end = question["pool"]
                part = F.normalize(linear("w_p", norm(hidden[begin:end].mean(0))), dim=-1)
                query = linear("w_q", norm(hidden[question["query"]]))
                markers = hidden[question["options"]]
                option = F.normalize(linear("w_o", norm(markers)) + query, dim=-1)
                cosine = (option * part).sum(-1) / h["log_tau"].exp()
                mlp = linear("cls_mlp.3", torch.relu(linear("cls_mlp.0", markers))).squeeze(-1)
                out.append((cosine + mlp).tolist())
            return out

    def answer(self, question, logits: list[float]) -> dict:
        return answer_of(self.temperature, question, logits)


def main() -> None:
    directory = sys.argv[1]
    reference = Reference(directory)
    with open(os.path.join(directory, "requests.jsonl"), encoding="utf-8") as f:
        requests = [json.loads(line) for line in f if line.strip()]
    packing, heads, expected = [], [], []
    for request in requests:
        sequences = reference.pack(request)
        if sequences is None:
            continue  # over-long questions: refused, checked by the tests directly
        # Option logits averaged over the windows in float32, as the package averages them.
        windows = [reference.logits(packed) for packed in sequences]
        logits = [torch.tensor([window[q] for window in windows], dtype=torch.float32).mean(0).tolist()
                  for q in range(len(windows[0]))]
        packing.append({"request": request, **sequences[0], "windows": [packed["ids"] for packed in sequences]})
        heads.append({"logits": logits})
        answers = {q["key"]: reference.answer(q, values) for q, values in zip(sequences[0]["questions"], logits)}
        expected.append({"request": request, "answers": answers,
                         "input_tokens": sum(len(packed["ids"]) for packed in sequences)})
    for name, lines in (("packing.jsonl", packing), ("heads.jsonl", heads), ("expected.jsonl", expected)):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(expected)} requests answered ({math.fsum(e['input_tokens'] for e in expected):.0f} tokens)")


if __name__ == "__main__":
    main()
