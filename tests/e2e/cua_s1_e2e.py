#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Cua-S1 stand-in with the cua-s1-text contract.

tests/fixtures/tiny-cua-s1 is a random tiny Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer and
chat template and s1serve.json {"contract": "cua-s1-text", "precision": "fp32"}; expected.jsonl holds
the Transformers reference's answers (tools/reference/make_tiny_cua_s1.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly and its answers within 1e-5;
2. noul and score questions: 400 unsupported_question_type (also beside a choice question);
   27 options: 400 too_many_options; /v1/models lists the model with 26 options and entropy confidence;
3. `s1serve validate` on the reference file passes tight gates (exit 0, no flips), fails on a
   tampered reference (exit 1: probability drift and a decision flip at a wide margin) and refuses
   an unusable file (exit 2).

    python3 tests/e2e/cua_s1_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from reference_answers import (  # noqa: E402
    check_choice_only, check_reference_request, check_tampered_reference_fails, check_validate_passes,
    contract_e2e_main, expect_error, listed_model, run_validate, validate_tampered)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-cua-s1")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="cua-s1") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)

        check_choice_only(server, name, problems)
        many = {"type": "choice", "criteria": {f"o{i}": None for i in range(27)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": many}}, 400, "too_many_options",
                     "27 options", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 26 or entry.get("question_types") != ["choice"]
                or entry.get("confidence_method") != "entropy"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--decision-margin", "0.0001"],
                          problems, questions=9)

    # Move probability mass in the first request to the reference's losing option: a 0.3 drift and, the
    # margin being wide, a decision flip.
    tampered = json.loads(json.dumps(lines[0]))
    answer = tampered["answers"]["pick"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    winner = answer["choice"]
    answer["probabilities"][loser], answer["probabilities"][winner] = 0.9, 0.1
    answer["choice"] = loser
    summary = check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)
    if not summary.get("max_prob_drift", 0) > 0.3:
        problems.append(f"validate on a tampered reference: drift {summary.get('max_prob_drift')}, expected over 0.3")
    # The same drift within a generous gate and with the flip under the decision margin passes.
    result, summary = validate_tampered(binary, MODEL_DIR, tampered, "--max-prob-drift", "0.9", "--decision-margin",
                                        "0.95")
    if result.returncode != 0 or summary.get("near_ties") != 1:
        problems.append(f"validate with wide gates: exit {result.returncode}, {result.stdout}")

    with tempfile.TemporaryDirectory() as temp:
        broken = os.path.join(temp, "broken.jsonl")
        with open(broken, "w") as f:
            f.write('{"answers": {}}\n')
        result = run_validate(binary, MODEL_DIR, broken)
        if result.returncode != 2 or "request" not in result.stderr:
            problems.append(f"validate on a line without a request: exit {result.returncode}, {result.stderr}")


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "cua-s1", MODEL_DIR, check_serving, [check_validate]))
