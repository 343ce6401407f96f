"""Python reference of s1serve's Valen contract (src/decide/contracts/valen.h).

A fixture generator built on Transformers, never part of the serving path. It follows the pinned upstream
as ThinkFlowLab/system1-omni serves it (src/models/valen/{protocol,preprocess,postprocess}.py, recipe/valen/
compare_reference.py) over Liuziyu77/Valen's compiler (valen/data/compilers/qwen.py) and bilinear head
(valen/modeling/qwen/model.py DecisionHead), and like that reference runs every question on its own:

- text(v): a string as-is, an object or array json.dumps(v, ensure_ascii=False); a state that is empty or
  only whitespace, instructions missing or blank, a blank criterion, or any text holding one of the
  tokenizer's special tokens (all_special_tokens plus the four vision tokens) is refused; a criterion
  `null` is described by its own name;
- base = the tokenizer's chat template over [{"role": "user", "content": [{"type": "text", "text": state}]}]
  without the generation prompt, tokenised once;
- per question, a suffix tokenised piece by piece with no special tokens: "<|im_start|>user\\n", then
  "Task: choice\\nQuestion: " + instructions + "\\nCandidates:\\n", then per candidate key + ": " +
  description (its endpoint: the piece's last token) and "\\n", then "Decision:" (the Decision position:
  the last token); base + suffix over 8192 tokens is refused;
- the fp32 forward over base + suffix (model.model(...).last_hidden_state, final norm applied);
  d = W_d·h[decision], c_i = W_c·h[endpoint_i] in float32, logit_i = (c_i·d) / sqrt(projection_dim);
- p = softmax(logits) in float64 at temperature 1; choice = argmax (earliest wins ties), confidence 1 for
  one candidate, else max(0, (p_max - 1/K) / (1 - 1/K));
- input_tokens = the base once + every question's suffix (the reference's logical tokens).

Output, one line per request, the format `s1serve validate --reference` reads:
    {"request": <the request>, "answers": {<key>: <System One answer>}, "input_tokens": N}
With --prompts, one line per question instead: {"request", "question", "base", "pieces", "ids",
"endpoints", "decision"}.

Usage: python3 tools/reference/valen_contract.py --model-dir DIR [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math

from decider_io import answer_stdin

MAX_LENGTH = 8192
VISION_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")


def text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ValenDecider:
    def __init__(self, model_dir: str):
        import torch
        from safetensors.torch import load_file
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        head = load_file(f"{model_dir}/valen_head.safetensors")
        self.decision = head["head.decision.weight"].float()
        self.candidate = head["head.candidate.weight"].float()
        self.scale = math.sqrt(self.decision.shape[0])
        self.reserved = tuple(self.tokenizer.all_special_tokens) + VISION_TOKENS

    def check(self, value: str, where: str) -> str:
        if any(token in value for token in self.reserved):
            raise ValueError(f"{where} contains a reserved tokenizer control token")
        return value

    def encode(self, piece: str) -> list[int]:
        return self.tokenizer.encode(piece, add_special_tokens=False)

    def base(self, state) -> tuple[str, list[int]]:
        state = self.check(text(state), "state")
        if not state.strip():
            raise ValueError("state must not be empty")
        rendered = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": [{"type": "text", "text": state}]}], tokenize=False,
            add_generation_prompt=False)
        return rendered, self.tokenizer(rendered, add_special_tokens=False)["input_ids"]

    def suffix(self, base_length: int, question: dict) -> tuple[list[str], list[int], list[int], int]:
        if question["type"] != "choice":
            raise ValueError("only choice questions")
        instructions = question.get("instructions")
        if instructions is None or not text(instructions).strip():
            raise ValueError("instructions are required")
        instructions = self.check(text(instructions), "instructions")
        pieces = ["<|im_start|>user\n", "Task: choice\nQuestion: " + instructions + "\nCandidates:\n"]
        ids = self.encode(pieces[0]) + self.encode(pieces[1])
        endpoints = []
        for key, value in question["criteria"].items():
            description = key if value is None else self.check(text(value), "criterion")
            self.check(key, "option name")
            if not description.strip():
                raise ValueError("blank criterion")
            pieces += [key + ": " + description, "\n"]
            ids += self.encode(pieces[-2])
            endpoints.append(base_length + len(ids) - 1)
            ids += self.encode("\n")
        pieces.append("Decision:")
        ids += self.encode("Decision:")
        if base_length + len(ids) > MAX_LENGTH:
            raise ValueError("over max_length")
        return pieces, ids, endpoints, base_length + len(ids) - 1

    def logits(self, ids: list[int], endpoints: list[int], decision: int) -> list[float]:
        torch = self.torch
        with torch.no_grad():
            hidden = self.model.model(torch.tensor([ids])).last_hidden_state[0]
            d = hidden[decision].float() @ self.decision.T
            c = hidden[endpoints].float() @ self.candidate.T
            return [float(v) for v in (c * d).sum(-1) / self.scale]

    def prompts(self, number: int, request: dict):
        rendered, base = self.base(request["state"])
        for key, question in request["questions"].items():
            pieces, suffix, endpoints, decision = self.suffix(len(base), question)
            yield {"request": number, "question": key, "base": rendered, "pieces": pieces, "ids": base + suffix,
                   "endpoints": endpoints, "decision": decision}

    def decide(self, request: dict) -> dict:
        _, base = self.base(request["state"])
        answers, tokens = {}, len(base)
        for key, question in request["questions"].items():
            _, suffix, endpoints, decision = self.suffix(len(base), question)
            tokens += len(suffix)
            logits = self.logits(base + suffix, endpoints, decision)
            top = max(logits)
            exps = [math.exp(v - top) for v in logits]
            total = sum(exps)
            p = [e / total for e in exps]
            names = list(question["criteria"])
            mode = max(range(len(p)), key=lambda i: (p[i], -i))
            n = len(p)
            confidence = 1.0 if n == 1 else max(0.0, (p[mode] - 1 / n) / (1 - 1 / n))
            answers[key] = {"type": "choice", "choice": names[mode], "confidence": confidence,
                            "probabilities": dict(zip(names, p))}
        return {"request": request, "answers": answers, "input_tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", action="store_true", help="print rendered pieces and token ids instead")
    args = parser.parse_args()
    decider = ValenDecider(args.model_dir)
    answer_stdin(decider.decide, decider.prompts, args.prompts)


if __name__ == "__main__":
    main()
