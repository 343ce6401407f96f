"""Python reference of s1serve's embedding-similarity decision contract (default model all-MiniLM-L6-v2).

This is the normative reference the C++ contract (decide/contracts/) is compared against; it is a
fixture generator, never part of the serving path.

Contract (see tests/parity/minilm/README.md):

- embed(text) = sentence-transformers pipeline of the model directory: Transformer (max_seq_length
  256, truncation) -> mean pooling -> L2 normalise, fp32:
  ``SentenceTransformer(dir).encode(texts, normalize_embeddings=True)``.
  (sentence-transformers before v5 applied ``str.strip()`` to each text first; for this WordPiece
  tokenizer that never changes the token ids, since the BERT normaliser and pre-tokeniser drop
  leading/trailing whitespace anyway.)
- text(x): a JSON string is used as-is; an object or array is rendered with
  ``json.dumps(x, ensure_ascii=False, separators=(",", ":"))`` (member order kept, raw non-ASCII).
- The state is embedded once: e_s = embed(text(state)).
- Candidates per question (I = text(instructions) when instructions are present and not null):
    choice: per option in criteria order, ``name`` if the description is null else
            ``name + ": " + text(description)``, preceded by ``I + " "`` when I is not empty;
    score:  per level in order, ``"This is " + text(level) + "."``;
    noul:   yes = text(criteria["true"]) if given and not null, else ``"yes, " + I`` if I exists, else "yes";
            no = text(criteria["false"]) if given and not null, else ``"no, " + I`` if yes came from I, else
            "not " + yes. Labels [yes, no].
- s_i = cos(e_s, e_c_i) = dot product of the normalised fp32 embeddings, accumulated in float64.
- p = softmax(s * SIMILARITY_SCALE) in float64, maximum subtracted first (T = 1/20).
- Answers and confidence as in reference/system-one-api.md section 5.1 (linear method).
- usage.input_tokens = tokens of the state text (with [CLS]/[SEP], after truncation) + the token
  count of every candidate of every question (same rule; repeated candidates count each time).

Usage as a library::

    decider = EmbeddingDecider(model_dir)
    result = decider.decide(request)   # {"answers": {...}, "input_tokens": int, "details": {...}}

Usage from the command line (one System One request per stdin line, one result per stdout line)::

    HF_HUB_OFFLINE=1 python3 tools/reference/embedding_contract.py --model-dir DIR < requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from answer_maths import softmax  # noqa: E402

# The one documented constant of the contract: p = softmax(cos * SIMILARITY_SCALE), i.e. T = 1/20.
SIMILARITY_SCALE = 20.0
MAX_SEQ_LENGTH = 256
DEFAULT_BATCH_SIZE = 32


def render_text(value: Any) -> str:
    """text(x): strings as-is, objects/arrays as compact JSON with raw non-ASCII."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    raise TypeError(f"state, instructions, descriptions and levels must be a string, object or array, got {type(value).__name__}")


def question_candidates(question: dict) -> list[str]:
    """The candidate texts of one question, in label order (noul: [yes, no])."""
    qtype = question["type"]
    criteria = question.get("criteria")
    instructions = question.get("instructions")
    text_i = None if instructions is None else render_text(instructions)
    if qtype == "choice":
        prefix = text_i + " " if text_i else ""
        out = []
        for name, description in criteria.items():
            out.append(prefix + (name if description is None else name + ": " + render_text(description)))
        return out
    if qtype == "score":
        return ["This is " + render_text(level) + "." for level in criteria]
    if qtype == "noul":
        criteria = criteria or {}
        # A null criterion is an undescribed side, as if absent (contract §11.1).
        has_true, has_false = criteria.get("true") is not None, criteria.get("false") is not None
        from_instructions = not has_true and text_i is not None
        if has_true:
            yes = render_text(criteria["true"])
        elif from_instructions:
            yes = "yes, " + text_i
        else:
            yes = "yes"
        if has_false:
            no = render_text(criteria["false"])
        elif from_instructions:
            no = "no, " + text_i
        else:
            no = "not " + yes
        return [yes, no]
    raise ValueError(f"unknown question type {qtype!r}")


def softmax_scaled(similarities: Sequence[float]) -> list[float]:
    """softmax(s * SIMILARITY_SCALE) in float64 with the maximum subtracted first, plain
    left-to-right sums (what a simple C++ loop does)."""
    return softmax([float(s) * SIMILARITY_SCALE for s in similarities])


def choice_answer(names: list[str], probs: list[float]) -> dict:
    n = len(probs)
    best = 0
    for i in range(1, n):
        if probs[i] > probs[best]:
            best = i
    if n == 1:
        confidence = 1.0
    else:
        confidence = min(1.0, max(0.0, (n * probs[best] - 1.0) / (n - 1)))
    return {
        "type": "choice",
        "choice": names[best],
        "confidence": confidence,
        "probabilities": dict(zip(names, probs)),
    }


def score_answer(levels: list[Any], probs: list[float]) -> dict:
    n = len(probs)
    score = 0.0
    for i, p in enumerate(probs):
        score += i * p
    mode = 0
    for i in range(1, n):
        if probs[i] > probs[mode]:
            mode = i
    centre = (n - 1) / 2.0
    spread = 0.0
    for i in range(n):
        spread += abs(i - centre)
    uniform = spread / n
    expected = 0.0
    for i, p in enumerate(probs):
        expected += p * abs(i - mode)
    confidence = max(0.0, 1.0 - expected / uniform)
    return {
        "type": "score",
        "score": score,
        "confidence": confidence,
        "legend": {str(i): level for i, level in enumerate(levels)},
        "probabilities": {str(i): p for i, p in enumerate(probs)},
    }


def noul_answer(probs: list[float]) -> dict:
    return {"type": "noul", "noul": probs[0]}


class EmbeddingDecider:
    """Loads the model directory written by scripts/fetch-default-model (sentence-transformers layout)."""

    def __init__(self, model_dir: str, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model_dir, device=device)
        if self.model.max_seq_length != MAX_SEQ_LENGTH:
            raise ValueError(f"expected max_seq_length {MAX_SEQ_LENGTH}, model has {self.model.max_seq_length}")

    # -- embeddings and tokens -------------------------------------------------------------------

    def embed(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE):
        """fp32 [n, 384] L2-normalised embeddings (numpy)."""
        import numpy as np

        emb = self.model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)

    def token_ids(self, text: str) -> list[int]:
        """Token ids exactly as the sentence-transformers forward sees them (specials, truncation)."""
        features = self.model.preprocess([text])
        ids = features["input_ids"][0]
        mask = features["attention_mask"][0]
        return [int(t) for t, m in zip(ids.tolist(), mask.tolist()) if m]

    def untruncated_token_count(self, text: str) -> int:
        """Token count with specials but without the 256 limit (to mark truncated fixtures)."""
        return len(self.model.tokenizer(text, truncation=False)["input_ids"])

    # -- decisions ---------------------------------------------------------------------------------

    def decide(self, request: dict, batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
        """System One request dict -> {"answers", "input_tokens", "details"}.

        The state and every candidate are embedded in one encode() call (state first, then the
        candidates of each question in request order); batch composition changes embeddings by at
        most ~1e-6, far below any decision tolerance.
        """
        import numpy as np

        state_text = render_text(request["state"])
        questions = request["questions"]
        per_question = [(key, q, question_candidates(q)) for key, q in questions.items()]
        texts = [state_text] + [c for _, _, cands in per_question for c in cands]
        emb = self.embed(texts, batch_size=batch_size).astype(np.float64)
        e_state = emb[0]

        state_tokens = len(self.token_ids(state_text))
        input_tokens = state_tokens
        answers: dict[str, dict] = {}
        details: dict[str, dict] = {}
        row = 1
        for key, q, cands in per_question:
            sims = []
            for _ in cands:
                # float64 dot product of the fp32 unit vectors, left-to-right accumulation
                e_c = emb[row]
                acc = 0.0
                for a, b in zip(e_state.tolist(), e_c.tolist()):
                    acc += a * b
                sims.append(acc)
                row += 1
            counts = [len(self.token_ids(c)) for c in cands]
            input_tokens += sum(counts)
            probs = softmax_scaled(sims)
            qtype = q["type"]
            if qtype == "choice":
                answers[key] = choice_answer(list(q["criteria"].keys()), probs)
            elif qtype == "score":
                answers[key] = score_answer(list(q["criteria"]), probs)
            else:
                answers[key] = noul_answer(probs)
            details[key] = {"candidates": cands, "candidate_tokens": counts, "similarities": sims}
        return {
            "answers": answers,
            "input_tokens": input_tokens,
            "details": {"state_text": state_text, "state_tokens": state_tokens, "questions": details},
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default=os.path.join(
        os.environ.get("S1SERVE_MODELS", os.path.expanduser("~/.local/share/s1serve/models")), "all-minilm-l6-v2"))
    parser.add_argument("--details", action="store_true", help="also print candidates and similarities")
    args = parser.parse_args(argv)
    decider = EmbeddingDecider(args.model_dir)
    for line in sys.stdin:
        if not line.strip():
            continue
        result = decider.decide(json.loads(line))
        if not args.details:
            result.pop("details")
        print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
