#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny JEV-27B-VL stand-in with the jev-vl contract.

tests/fixtures/tiny-jev-vl is a random tiny Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer, the two
files of system1-omni's export (jev_vl_export.json: 56 single-token option labels, the 24 verbalizer
slots with random biases, per-kind temperatures, max_length 512; label_head.safetensors: the rows) and
s1serve.json {"contract": "jev-vl", "precision": "fp32"}; expected.jsonl holds the Transformers
reference's answers with every question run as its own upstream request (tools/reference/make_tiny_jev_vl.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, answers within
   the declared tolerance, input_tokens the shared-prefix count;
2. refusals: a prompt over max_length (400 max_tokens_exceeded), 57 options (400 too_many_options), a
   five-level score and a noul with criteria (422), an image part (400 unsupported_media); /v1/models
   lists the contract's limits;
3. `s1serve validate` on the reference file passes the declared gate and fails a tampered one.

    python3 tests/e2e/jev_vl_e2e.py --binary build/s1serve
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
    listed_model)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-jev-vl")
# Declared before comparing: the hybrid family's fp32 logit gate (1e-4 × the logit scale) carried
# through the rows, the slot bias, the temperature and the softmax.
TOLERANCE = 1e-4


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="jev-vl") as server:
        for number, line in enumerate(lines):
            model = [name, "jev-27b-vl-stand-in"][number % 2]
            check_reference_request(server, dict(line["request"], model=model), line, f"request {number} ({model})",
                                    TOLERANCE, problems)

        noul = {"type": "noul", "instructions": "Ok?"}
        long_state = " ".join(str(i * 7919) for i in range(300))
        expect_error(server, {"model": name, "state": long_state, "questions": {"q": noul}}, 400,
                     "max_tokens_exceeded", "a prompt over max_length", problems)
        wide = {"type": "choice", "criteria": {f"o{i}": None for i in range(57)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": wide}}, 400, "too_many_options",
                     "57 options", problems)
        five = {"type": "score", "instructions": "Rate.", "criteria": ["a", "b", "c", "d", "e"]}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": five}}, 422, None, "five levels",
                     problems, location=["body", "questions", "q", "criteria"])
        described = {"type": "noul", "instructions": "Ok?", "criteria": {"true": "fine"}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": described}}, 422, None,
                     "noul criteria", problems, location=["body", "questions", "q", "criteria"])
        expect_error(server, {"model": name, "state": ["look", {"image": "data:image/png;base64,iVBORw0KGgo="}],
                              "questions": {"q": noul}}, 400, "unsupported_media", "an image part", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 56 or entry.get("context_tokens") != 512
                or sorted(entry.get("question_types", [])) != ["choice", "noul", "score"]
                or "jev-27b-vl-stand-in" not in entry.get("aliases", [])):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE)],
                          problems, questions=9)
    tampered = json.loads(json.dumps(lines[0]))
    answer = tampered["answers"]["action"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    answer["probabilities"] = {k: (0.9 if k == loser else 0.05) for k in answer["probabilities"]}
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "jev-vl", MODEL_DIR, check_serving, [check_validate]))
