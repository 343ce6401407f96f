#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny LAYA stand-in with the laya contract.

tests/fixtures/tiny-laya is a random tiny ModernBERT + decision-head checkpoint laid out as
convaiinnovations/laya is, with s1serve.json {"contract": "laya", "precision": "fp32"}; expected.jsonl
holds laya==0.3.20's own answers (tools/reference/make_tiny_laya.py, tools/reference/laya_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape (except that
   LAYA's 4-decimal rounding lets probabilities miss 1 by n·5e-5 and the score miss Σ i·pᵢ by the
   same: the deliberate per-model difference), the reference's input_tokens exactly, its decisions
   exactly and every number within one rounding step (1e-4);
2. limits: 17 questions 413 payload_too_large; a choice whose 200 options push markers past the
   512-token row 400 too_many_options; 16 questions of all three types are answered;
3. /v1/models lists the model with all three question types, 255 options and entropy confidence.

    python3 tests/e2e/laya_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from reference_answers import (  # noqa: E402
    check_reference_request, contract_e2e_main, expect_error, listed_model, post_systemone)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-laya")
TOLERANCE = 1e-4 + 1e-9  # one step of the 4-decimal rounding
# The generic §8.4 checks that full-precision answers meet and 4-decimal answers cannot.
ROUNDING_PROBLEMS = ("probabilities sum to", "!= sum(i*p)")


def check_rounded(where, answer, problems):
    if answer["type"] == "noul":
        return
    probabilities = list(answer["probabilities"].values())
    if abs(sum(probabilities) - 1.0) > len(probabilities) * 5e-5 + 1e-9:
        problems.append(f"{where}: rounded probabilities sum to {sum(probabilities)}")
    for p in probabilities + [answer["confidence"]]:
        if round(p, 4) != p:
            problems.append(f"{where}: {p} is not rounded to 4 decimals")
    if answer["type"] == "score":
        expected = sum(i * p for i, p in enumerate(probabilities))
        if abs(answer["score"] - expected) > len(probabilities) ** 2 * 5e-5 or round(answer["score"], 4) != answer["score"]:
            problems.append(f"{where}: score {answer['score']} vs Σ i·p {expected}")


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="laya") as server:
        for number, line in enumerate(lines):
            where = f"request {number}"
            response = check_reference_request(server, dict(line["request"], model=name), line, where, TOLERANCE,
                                               problems, known_shape_problems=ROUNDING_PROBLEMS)
            if response is None:
                continue
            for key, answer in response.json()["answers"].items():
                check_rounded(f"{where}/{key}", answer, problems)

        kinds = [{"type": "noul", "instructions": "Is it late?"},
                 {"type": "choice", "criteria": {"a": None, "b": "bee"}},
                 {"type": "score", "criteria": ["lo", "mid", "hi"]}]
        sixteen = {f"q{i}": kinds[i % 3] for i in range(16)}
        response = post_systemone(server, {"model": name, "state": "s", "questions": sixteen})
        if response.status != 200 or len(response.json().get("answers", {})) != 16:
            problems.append(f"16 questions: {response.status} {response.body[:200]!r}")
        expect_error(server, {"model": name, "state": "s", "questions": dict(sixteen, q16=kinds[0])}, 413,
                     "payload_too_large", "17 questions", problems)
        wide = {"type": "choice", "criteria": {f"option {i}": None for i in range(200)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"wide": wide}}, 400, "too_many_options",
                     "200 options", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255
                or sorted(entry.get("question_types", [])) != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "entropy"):
            problems.append(f"/v1/models entry {entry}")


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "laya", MODEL_DIR, check_serving))
