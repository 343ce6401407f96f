"""Python reference of s1serve's Clef contract (src/decide/contracts/clef.h): Clef-flash (9B) and Clef
(27B), a Qwen3.5 / Qwen3.8 backbone read at every prompt position by the joint schema head.

A fixture generator built on Transformers and torch.nn, never part of the serving path. Written from
the public ports, not copied: SGLang's python/sglang/srt/entrypoints/systemone/joint_schema.py (the
prompt, after encode_record of the checkpoint's joint_schema_model.py) and
python/sglang/srt/layers/joint_schema_head.py (the head, parameter names as in joint_head.safetensors),
cross-checked with llama.cpp's `clef` decision type (tools/server/server-decision.cpp).

Prompt: one record for all questions, each piece tokenized on its own (add_special_tokens=False):
    PREFIX | state | "\\n\\nSCHEMA FIELDS:\\n" | per question i (request order):
      "\\nFIELD i\\nID: <key>\\nTYPE: <type>\\nINSTRUCTION: " | <instructions> | "\\nALLOWED OPTIONS:\\n" |
      per option k: "OPTION k: " | {"description":…,"option_id":…} | "\\n"  … | "END FIELD\\n"
    | SUFFIX
values as `v if str else json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`;
empty or absent instructions become the question key; options: noul true then false (default
descriptions below), choice sorted by name, score levels "0".."n-1". The state's tokens are cut so
the prompt holds at most max_length tokens (16384 by default); a schema that alone exceeds it is refused.

Head (fp32 here): LayerNorm over every final hidden state; span means of the question and option
spans, the lexical mean of the LM head rows of each option's tokens, the last token as the global
vector; 2 evidence-routing layers (options attend to the projected token memory), per-question
option attention summaries, 4 nn.TransformerDecoderLayer (norm first) over the questions of the
record with cross-attention to the memory; logit = prior + sigmoid(gate)·(joint_scale·cos + residual).
Per-question softmax at temperature 1; answers as llama.cpp's clef type gives them (the API defaults):
noul p(true), choice first argmax with linear confidence, score expected level with the spread
confidence.

Output lines as `s1serve validate --reference` reads them:
    {"request": …, "answers": {…}, "input_tokens": N}
With --prompts, one line per request instead: {"request", "ids"}.

Usage: python3 tools/reference/clef_contract.py --model-dir DIR [--max-length N] [--prompts] < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import torch.nn.functional as F
from torch import nn

from code_readout_contract import answer, softmax
from decider_io import answer_stdin

QUESTION_TYPES = ("noul", "choice", "score")
SYSTEM_PROMPT = ("Read the complete state and schema. Decide every field jointly. Each answer must be exactly one "
                 "of that field's allowed options.")
PREFIX = f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\nSTATE:\n"
SUFFIX = "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nJOINT SCHEMA DECISIONS:"
NOUL_DESCRIPTIONS = {"true": "The proposition is true or the answer is yes.",
                     "false": "The proposition is false or the answer is no."}
MAX_LENGTH = 16384
HEAD_KEYS = ("hidden_size", "width", "routing_layers", "layers", "heads", "feedforward")


def render(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def options(question: dict) -> list[tuple[str, object]]:
    """(name, description or None) in the order the head scores them."""
    kind = question["type"]
    if kind == "noul":
        described = dict(NOUL_DESCRIPTIONS, **(question.get("criteria") or {}))
        return [(name, described[name]) for name in ("true", "false")]
    if kind == "choice":
        return sorted(question["criteria"].items(), key=lambda item: item[0])
    return [(str(level), detail) for level, detail in enumerate(question["criteria"])]


def encode(tokenizer, request: dict, max_length: int):
    """(ids, layout): layout is one (type index, question span, option spans) per question."""
    def tokens(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    schema = tokens("\n\nSCHEMA FIELDS:\n")
    layout = []
    for index, (key, question) in enumerate(request["questions"].items()):
        schema += tokens(f"\nFIELD {index + 1}\nID: {key}\nTYPE: {question['type']}\nINSTRUCTION: ")
        instructions = question.get("instructions")
        if instructions is None or instructions == "":
            instructions = key
        start = len(schema)
        schema += tokens(render(instructions))
        question_span = (start, len(schema))
        schema += tokens("\nALLOWED OPTIONS:\n")
        spans = []
        for number, (name, description) in enumerate(options(question)):
            schema += tokens(f"OPTION {number + 1}: ")
            start = len(schema)
            semantics = {"option_id": name}
            if description is not None:
                semantics["description"] = description
            schema += tokens(render(semantics))
            spans.append((start, len(schema)))
            schema += tokens("\n")
        schema += tokens("END FIELD\n")
        layout.append((QUESTION_TYPES.index(question["type"]), question_span, spans))
    prefix, suffix = tokens(PREFIX), tokens(SUFFIX)
    fixed = len(prefix) + len(schema) + len(suffix)
    if fixed > max_length:
        raise ValueError(f"the questions need {fixed} prompt tokens before the state, at most {max_length} fit")
    state = tokens(render(request["state"]))[: max_length - fixed]
    offset = len(prefix) + len(state)
    shifted = [(kind, (q[0] + offset, q[1] + offset), [(s + offset, e + offset) for s, e in spans])
               for kind, q, spans in layout]
    return prefix + state + schema + suffix, shifted


class EvidenceRoutingLayer(nn.Module):
    def __init__(self, width: int, heads: int, feedforward: int) -> None:
        super().__init__()
        self.query_norm = nn.LayerNorm(width)
        self.memory_norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.feedforward_norm = nn.LayerNorm(width)
        # Indices 1, 2 and 4 hold no parameters (GELU and the checkpoint's dropout slots).
        self.feedforward = nn.Sequential(nn.Linear(width, feedforward), nn.GELU(), nn.Identity(),
                                         nn.Linear(feedforward, width), nn.Identity())


class JointSchemaHead(nn.Module):
    def __init__(self, hidden_size: int, width: int, routing_layers: int, layers: int, heads: int,
                 feedforward: int) -> None:
        super().__init__()
        self.hidden_norm = nn.LayerNorm(hidden_size)
        for name in ("memory", "question", "option_question", "global", "option_context", "option_lexical"):
            setattr(self, f"{name}_projection", nn.Linear(hidden_size, width, bias=False))
        self.type_embedding = nn.Embedding(len(QUESTION_TYPES), width)
        self.evidence_layers = nn.ModuleList(EvidenceRoutingLayer(width, heads, feedforward)
                                             for _ in range(routing_layers))
        self.option_summary_norm = nn.LayerNorm(width)
        self.layers = nn.ModuleList(
            nn.TransformerDecoderLayer(d_model=width, nhead=heads, dim_feedforward=feedforward, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=True)
            for _ in range(layers))
        self.field_norm = nn.LayerNorm(width)
        self.option_norm = nn.LayerNorm(width)
        self.residual_scorer = nn.Sequential(nn.Linear(width * 4, width), nn.GELU(), nn.Identity(),
                                             nn.Linear(width, 1))
        self.prior_logit_scale = nn.Parameter(torch.zeros(()))
        self.joint_logit_scale = nn.Parameter(torch.zeros(()))
        self.residual_gate = nn.Parameter(torch.zeros(()))

    @torch.no_grad()
    def forward(self, hidden, ids, layout, lm_head) -> list[list[float]]:
        """One record: hidden [T, H] final states, ids [T], lm_head [V, H]; logits per question."""
        normalized = self.hidden_norm(hidden)
        memory = self.memory_projection(normalized)
        global_vector = normalized[-1]
        owner = [q for q, (_, _, spans) in enumerate(layout) for _ in spans]
        questions = torch.stack([normalized[s:e].mean(0) for _, (s, e), _ in layout])
        contexts = torch.stack([normalized[s:e].mean(0) for _, _, spans in layout for s, e in spans])
        lexical = torch.stack([lm_head[ids[s:e]].mean(0) for _, _, spans in layout for s, e in spans])

        routed = (self.option_context_projection(contexts) + self.option_lexical_projection(lexical)
                  + self.option_question_projection(questions)[owner])
        for layer in self.evidence_layers:
            keys = layer.memory_norm(memory).unsqueeze(0)
            attended, _ = layer.attention(layer.query_norm(routed).unsqueeze(0), keys, keys, need_weights=False)
            routed = routed + attended[0]
            routed = routed + layer.feedforward(layer.feedforward_norm(routed))

        base = self.question_projection(questions)
        summaries = []
        for q in range(len(layout)):
            mine = [o for o, owner_q in enumerate(owner) if owner_q == q]
            weights = torch.softmax(routed[mine] @ base[q] / math.sqrt(routed.shape[-1]), dim=0)
            summaries.append((weights.unsqueeze(-1) * routed[mine]).sum(0))
        types = torch.tensor([kind for kind, _, _ in layout])
        fields = (base + self.option_summary_norm(torch.stack(summaries)) + self.global_projection(global_vector)
                  + self.type_embedding(types))
        for layer in self.layers:
            fields = layer(fields.unsqueeze(0), memory.unsqueeze(0))[0]
        fields = self.field_norm(fields)

        prior_scale = self.prior_logit_scale.clamp(max=math.log(100.0)).exp()
        joint_scale = self.joint_logit_scale.clamp(max=math.log(100.0)).exp()
        anchor = F.normalize(questions + global_vector, dim=-1)[owner]
        prior = prior_scale * (F.normalize(lexical, dim=-1) * anchor).sum(-1)
        option_vectors = self.option_norm(routed)
        repeated = fields[owner]
        cosine = F.cosine_similarity(repeated, option_vectors, dim=-1)
        features = torch.cat([repeated, option_vectors, repeated * option_vectors,
                              (repeated - option_vectors).abs()], dim=-1)
        residual = self.residual_scorer(features).squeeze(-1)
        logits = prior + torch.sigmoid(self.residual_gate) * (joint_scale * cosine + residual)
        out, first = [], 0
        for _, _, spans in layout:
            out.append(logits[first:first + len(spans)].tolist())
            first += len(spans)
        return out


def ordered_answer(question: dict, sorted_logits: list[float]) -> dict:
    """The API answer: the head's option order mapped back to the request's (choice is scored sorted,
    noul true then false)."""
    names = [name for name, _ in options(question)]
    if question["type"] == "choice":
        by_name = dict(zip(names, sorted_logits))
        logits = [by_name[name] for name in question["criteria"]]
    elif question["type"] == "noul":
        logits = [sorted_logits[1], sorted_logits[0]]  # answer() reads (false, true)
    else:
        logits = sorted_logits
    return answer(question, softmax(logits, 1.0))


class ClefDecider:
    def __init__(self, model_dir: str, max_length: int = MAX_LENGTH, dtype=torch.float32):
        from safetensors.torch import load_file
        from transformers import AutoTokenizer
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5ForConditionalGeneration

        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = Qwen3_5ForConditionalGeneration.from_pretrained(model_dir, dtype=dtype).eval()
        self.text_model = model.model.language_model
        self.lm_head = model.lm_head.weight.detach()
        with open(f"{model_dir}/joint_head_config.json") as f:
            self.head = JointSchemaHead(**json.load(f)).eval()
        self.head.load_state_dict({k: v.float() for k, v in load_file(f"{model_dir}/joint_head.safetensors").items()},
                                  strict=True)
        self.head.to(dtype)

    def prompt(self, request: dict):
        return encode(self.tokenizer, request, self.max_length)

    def logits(self, request: dict):
        ids, layout = self.prompt(request)
        with torch.no_grad():
            hidden = self.text_model(input_ids=torch.tensor([ids]), use_cache=False).last_hidden_state[0]
        return ids, self.head(hidden, torch.tensor(ids), layout, self.lm_head)

    def decide(self, request: dict) -> dict:
        ids, logits = self.logits(request)
        answers = {key: ordered_answer(question, question_logits)
                   for (key, question), question_logits in zip(request["questions"].items(), logits)}
        return {"request": request, "answers": answers, "input_tokens": len(ids)}


def main() -> None:
    parser = argparse.ArgumentParser(description="Clef reference answers (JSON lines) for requests on stdin")
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH)
    parser.add_argument("--prompts", action="store_true")
    args = parser.parse_args()
    decider = ClefDecider(args.model_dir, args.max_length)
    answer_stdin(decider.decide, lambda number, request: [{"request": number, "ids": decider.prompt(request)[0]}],
                 args.prompts)


if __name__ == "__main__":
    main()
