#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Decider-2B stand-in with the decider-2b contract.

tests/fixtures/tiny-decider is a random tiny Qwen3.5 checkpoint laid out as Decider-2B v11 (tied
embeddings, one model.safetensors, every label a single token of its tokenizer) with s1serve.json
{"contract": "decider-2b", "precision": "fp32", "label_token_ids": [...]}; expected.jsonl holds the
Transformers reference's answers (tools/reference/make_tiny_decider.py, decider_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly and its answers within 1e-4 (choice, noul, score incl. the legend);
2. prefix sharing: a request's questions asked one per request add up to more input tokens than the
   same questions asked together, by the shared state prefix counted once instead of each time;
3. refusals: a one-option choice, a choice without instructions, a noul with neither instructions
   nor descriptions: 400 unsupported_question_type; a state longer than the model's context: 400
   max_tokens_exceeded; /v1/models lists the three types, 255 options and linear confidence;
4. `s1serve validate` on the reference file passes tight gates (exit 0) and fails on a tampered
   reference (exit 1).

    python3 tests/e2e/decider_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from reference_answers import (  # noqa: E402
    check_reference_request, check_tampered_reference_fails, check_validate_passes, contract_e2e_main, expect_error,
    listed_model, post_systemone)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-decider")
TOLERANCE = 1e-4


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="decider") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)

        # Request 1 asks three questions about one structured state: together the state counts once.
        shared = lines[1]["request"]
        alone = 0
        for key, question in shared["questions"].items():
            response = post_systemone(server, {"model": name, "state": shared["state"], "questions": {key: question}})
            alone += response.json()["usage"]["input_tokens"] if response.status == 200 else 0
        together = lines[1]["input_tokens"]
        state_tokens = len(json.dumps(shared["state"]))  # a loose lower bound is enough: the state is long
        if not alone - together > state_tokens // 8:
            problems.append(f"prefix sharing: {together} input tokens together vs {alone} one by one")

        for where, question in (
                ("one-option choice", {"type": "choice", "instructions": "x", "criteria": {"only": None}}),
                ("choice without instructions", {"type": "choice", "criteria": {"a": None, "b": None}}),
                ("noul with empty instructions", {"type": "noul", "instructions": ""})):
            expect_error(server, {"model": name, "state": "s", "questions": {"q": question}}, 400,
                         "unsupported_question_type", where, problems)
        long_state = " ".join(f"word{i}" for i in range(3000))
        expect_error(server, {"model": name, "state": long_state,
                              "questions": {"q": {"type": "noul", "instructions": "Long?"}}},
                     400, "max_tokens_exceeded", "state over the context", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "linear"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE),
                                              "--decision-margin", "0.001"],
                          problems, questions=sum(len(line["answers"]) for line in lines))

    tampered = json.loads(json.dumps(lines[0]))
    answer = tampered["answers"]["team"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    for option in answer["probabilities"]:
        answer["probabilities"][option] = 0.9 if option == loser else 0.05
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "decider", MODEL_DIR, check_serving, [check_validate]))
