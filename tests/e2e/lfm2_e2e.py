#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny LFM2.5-350M stand-in with the
lfm2-candidate-likelihood contract.

tests/fixtures/tiny-lfm2 is a random tiny Lfm2ForCausalLM with a tiny tokenizer carrying LFM2's chat
tokens, the LFM2.5 chat template and s1serve.json {"contract": "lfm2-candidate-likelihood",
"precision": "fp32"}; expected.jsonl holds the Transformers reference's answers, each option scored by
an uncached forward (tools/reference/make_tiny_lfm2.py, tools/reference/lfm2_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone (by name and by alias): 200 with the
   §8.4 shape, the reference's input_tokens exactly and its answers within 1e-5;
2. noul and score questions: 400 unsupported_question_type (also beside a choice question);
   /v1/models lists the model with 255 options and entropy confidence;
3. `s1serve validate` on the reference file passes tight gates (exit 0).

    python3 tests/e2e/lfm2_e2e.py --binary build/s1serve
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
    check_choice_only, check_reference_request, check_validate_passes, contract_e2e_main, listed_model)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-lfm2")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with open(os.path.join(MODEL_DIR, "s1serve.json"), encoding="utf-8") as f:
        alias = json.load(f)["aliases"][0]
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="lfm2") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name if number % 2 == 0 else alias)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)

        check_choice_only(server, name, problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("question_types") != ["choice"]
                or entry.get("confidence_method") != "entropy"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--decision-margin", "0.0001"],
                          problems, questions=6)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "lfm2", MODEL_DIR, check_serving, [check_validate]))
