#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Vela 2.0 0.3B stand-in with the vela-0.3b contract.

tests/fixtures/tiny-vela is a vela2-unified package around a random tiny ModernBERT with a random marker
head; expected.jsonl holds the Transformers + torch reference's answers (tools/reference/make_tiny_vela.py,
tools/reference/vela_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly (the one-sequence length, cut states included) and its answers
   within 1e-5;
2. refusals: span and set questions (the API's 422 union_tag_invalid at the question's type: Vela's
   extensions are outside the three System One kinds), questions and options that leave no room for
   the state in the 192-token sequence (400 max_tokens_exceeded); /v1/models lists the model with its
   three question types, 255 options, the sequence length and top2_margin confidence;
3. `s1serve validate` on the reference file passes tight gates.

    python3 tests/e2e/vela_e2e.py --binary build/s1serve
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
    check_reference_request, check_span_and_set_refused, check_validate_passes, contract_e2e_main,
    expect_error)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-vela")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="vela") as server:
        for number, line in enumerate(lines):
            check_reference_request(server, dict(line["request"], model=name), line, f"request {number}",
                                    TOLERANCE, problems)

        check_span_and_set_refused(server, name, problems)
        many = {f"q{i}": {"type": "noul", "instructions": "Is it fine?"} for i in range(40)}
        expect_error(server, {"model": name, "state": "short", "questions": many}, 400, "max_tokens_exceeded",
                     "questions leaving no room for the state", problems)

        listed = s1harness.request(server, "GET", "/v1/models").json()
        entry = next((m for m in listed.get("models", []) if m.get("name") == name), None)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != 192
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "top2_margin"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--decision-margin", "0.0001"],
                          problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "vela", MODEL_DIR, check_serving, [check_validate]))
