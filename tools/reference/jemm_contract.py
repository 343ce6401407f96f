"""Python reference of s1serve's JEMM text contract (src/decide/contracts/jemm.h).

A fixture generator built on Transformers, never part of the serving path. It follows the pinned
reference ypcypc/JEMM @ 6822fe0fd53c5e6670af6ba99fb2c857a661e532 (jemm/contract.py single_messages,
_render_tool, _param_names; jemm/systemone.py candidates_for, single_requests, answer; jemm/model.py
softmax) applied to /v1/systemone requests:

- system message: SYSTEM; user message "State:\\n" + state.strip() + "\\n\\nQuestion: " +
  flat(str(instructions)) + "\\n\\nCandidates:\\n" + "X) <candidate>" lines + "\\n\\nAnswer with exactly
  one candidate label." where a structured state is json.dumps(ensure_ascii=False, separators=(",", ":"))
  and flat() collapses runs of whitespace (re \\s+) and strips;
- candidates: choice values in order (dict: str(value.get("description", "")); None: ""; else str());
  a value whose "action" dict has "tool_name" renders as a tool spec; noul yes, no (criteria
  true/false descriptions, else "yes"/"no"); score levels (description, else "level i");
- tokenizer.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False) tokenised
  without added special tokens;
- labels A-Z then 0-5; the fp32 forward's last-position logits of the labels in use, rounded to BF16
  (the reference's BF16 LM head; --no-bf16-logits keeps them), softmax(scores / T) in float64 with
  T = 1.3480874159655591; choice = first argmax, confidence = p_max (score too), noul = p(yes),
  score = sum(i * p_i).

Where s1serve's API differs, this script follows s1serve: null instructions render empty (the API
does not tell null from absent; the reference would print "None"), a one-option choice is answered
(the reference refuses fewer than 2 candidates), and input_tokens counts the questions' shared token
prefix once (rounded down to 64 for the Qwen3.5 hybrid) plus every prompt's remaining tokens (the
reference sums whole prompts).

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per question instead: {"request", "question", "text", "ids"}.

With --adapter-dir, a PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors) is added to the
fp32 weights (scale * B @ A, no BF16 rounding of the delta: PEFT's unmerged fp32 maths up to rounding).

Usage: python3 tools/reference/jemm_contract.py --model-dir DIR [--adapter-dir DIR] [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import re

from answer_maths import shared_prefix_length
from decider_io import answer_stdin, question_prompt_lines

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
SYSTEM = ("Choose the best available candidate for the question using only the supplied state. "
          "Return exactly one candidate label.")
TEMPERATURE = 1.3480874159655591
_WS = re.compile(r"\s+")


def flat(text: str) -> str:
    return _WS.sub(" ", text or "").strip()


def description(spec) -> str:
    if isinstance(spec, dict):
        return str(spec.get("description", ""))
    return "" if spec is None else str(spec)


def parameter_names(params) -> list[str]:
    if not isinstance(params, dict):
        return []
    props = params["properties"] if isinstance(params.get("properties"), dict) else params
    required = params.get("required", [])
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    names = []
    for key, spec in props.items():
        if key in ("properties", "required", "type") and not isinstance(spec, dict):
            continue
        piece = key
        if isinstance(spec, dict):
            if key in required:
                piece += "*"
            default = spec.get("default")
            if default is not None and default != "":
                piece += "=" + flat(str(default))[:24]
        names.append(piece)
    return names


def tool_text(text: str) -> str:
    try:
        tool = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return flat(text)
    if not isinstance(tool, dict) or "name" not in tool:
        return flat(text)
    rendered = flat(str(tool.get("name", "")))
    summary = flat(str(tool.get("description", "")))
    if summary:
        rendered += " \u2014 " + summary
    names = parameter_names(tool.get("parameters"))
    return rendered + (" | params: " + ", ".join(names) if names else "")


def candidate_texts(question: dict) -> list[str]:
    kind, criteria = question["type"], question.get("criteria")
    if kind == "noul":
        crit = criteria if isinstance(criteria, dict) else {}
        return [flat(description(crit.get("true")) or "yes"), flat(description(crit.get("false")) or "no")]
    if kind == "score":
        return [flat(description(level) or f"level {i}") for i, level in enumerate(criteria)]
    texts = []
    for value in criteria.values():
        action = value.get("action") if isinstance(value, dict) else None
        is_tool = isinstance(action, dict) and "tool_name" in action
        texts.append(tool_text(description(value)) if is_tool else flat(description(value)))
    return texts


def messages(state, question: dict) -> list[dict]:
    state_text = state if isinstance(state, str) else json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    instructions = question.get("instructions")
    instructions = "" if instructions is None else str(instructions)
    lines = [f"{LABELS[i]}) {text}" for i, text in enumerate(candidate_texts(question))]
    user = ("State:\n" + state_text.strip() + "\n\nQuestion: " + flat(instructions) + "\n\nCandidates:\n"
            + "\n".join(lines) + "\n\nAnswer with exactly one candidate label.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def probabilities(scores: list[float]):
    import numpy as np

    values = np.asarray(scores, dtype=np.float64) / TEMPERATURE
    return [float(p) for p in np.exp(values - np.logaddexp.reduce(values))]


def answer(question: dict, p: list[float]) -> dict:
    kind = question["type"]
    best = max(range(len(p)), key=lambda i: (p[i], -i))
    if kind == "noul":
        return {"type": "noul", "noul": p[0]}
    if kind == "score":
        return {"type": "score", "score": sum(i * x for i, x in enumerate(p)), "confidence": p[best],
                "legend": {str(i): level for i, level in enumerate(question["criteria"])},
                "probabilities": {str(i): x for i, x in enumerate(p)}}
    names = list(question["criteria"])
    return {"type": "choice", "choice": names[best], "confidence": p[best],
            "probabilities": dict(zip(names, p))}


def merge_adapter_fp32(model, adapter_dir: str) -> int:
    """Adds scale * B @ A of every PEFT LoRA pair in adapter_dir to the fp32 model's weights: in fp32
    this equals PEFT's unmerged W x + scale * B (A x) up to rounding (no BF16 rounding of the delta)."""
    import torch
    from safetensors.torch import load_file

    with open(f"{adapter_dir}/adapter_config.json", encoding="utf-8") as f:
        config = json.load(f)
    scale = config["lora_alpha"] / config["r"]
    tensors = load_file(f"{adapter_dir}/adapter_model.safetensors")
    parameters = dict(model.named_parameters())
    merged = 0
    for name, a in tensors.items():
        if not name.endswith(".lora_A.weight"):
            continue
        b = tensors[name.replace(".lora_A.weight", ".lora_B.weight")]
        target = name[len("base_model.model."):-len(".lora_A.weight")] + ".weight"
        with torch.no_grad():
            parameters[target] += scale * (b.float() @ a.float())
        merged += 1
    return merged


class JemmDecider:
    def __init__(self, model_dir: str, bf16_logits: bool = True, adapter_dir: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        if adapter_dir is not None:
            merge_adapter_fp32(self.model, adapter_dir)
        self.label_ids = []
        for label in LABELS:
            ids = self.tokenizer.encode(label, add_special_tokens=False)
            if len(ids) != 1:
                raise ValueError(f"label {label!r} is not a single token: {ids}")
            self.label_ids.append(ids[0])
        self.bf16_logits = bf16_logits
        self.granularity = 64 if self.model.config.model_type.startswith("qwen3_5") else 1

    def prompt(self, state, question: dict) -> tuple[str, list[int]]:
        rendered = self.tokenizer.apply_chat_template(messages(state, question), tokenize=False,
                                                      add_generation_prompt=True, enable_thinking=False)
        return rendered, self.tokenizer.encode(rendered, add_special_tokens=False)

    def decide(self, request: dict) -> dict:
        questions = request["questions"]
        prompts = [self.prompt(request["state"], q)[1] for q in questions.values()]
        prefix = shared_prefix_length(prompts, self.granularity)
        answers = {}
        with self.torch.no_grad():
            for (key, question), ids in zip(questions.items(), prompts):
                count = len(candidate_texts(question))
                logits = self.model(self.torch.tensor([ids])).logits[0, -1][self.label_ids[:count]]
                if self.bf16_logits:
                    logits = logits.to(self.torch.bfloat16)
                answers[key] = answer(question, probabilities([float(x) for x in logits]))
        return {"request": request, "answers": answers,
                "input_tokens": prefix + sum(len(p) - prefix for p in prompts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered prompts and token ids instead")
    parser.add_argument("--no-bf16-logits", action="store_true", help="keep the label logits in fp32")
    parser.add_argument("--adapter-dir", help="a PEFT LoRA adapter to apply (merged in fp32)")
    args = parser.parse_args()
    decider = JemmDecider(args.model_dir, not args.no_bf16_logits, args.adapter_dir)
    answer_stdin(decider.decide, lambda number, request: question_prompt_lines(number, request, decider.prompt), args.prompts)


if __name__ == "__main__":
    main()
