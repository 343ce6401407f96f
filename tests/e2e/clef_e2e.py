#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Clef stand-in with the clef contract.

tests/fixtures/tiny-clef is a random tiny Qwen3_5ForConditionalGeneration with an untied LM head and a
random joint schema head in the release's layout; expected.jsonl holds the Transformers + torch.nn
reference's answers (tools/reference/make_tiny_clef.py, tools/reference/clef_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly (one record, the long state cut to max_length) and its answers
   within 5e-5; `"thinking": {"enabled": false}` gives the same answers;
2. refusals: questions whose schema alone exceeds max_length (400 max_tokens_exceeded), an image
   (400 unsupported_media: the images path has not landed); /v1/models lists all three question
   types, 255 options, linear confidence and max_length as the context;
3. `s1serve validate` on the reference file passes tight gates.

    python3 tests/e2e/clef_e2e.py --binary build/s1serve
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
    check_reference_request, check_validate_passes, contract_e2e_main, expect_error, listed_model)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-clef")
TOLERANCE = 5e-5


def check_serving(binary, name, lines, problems):
    with open(os.path.join(MODEL_DIR, "s1serve.json"), encoding="utf-8") as f:
        max_length = json.load(f)["max_length"]
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="clef") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)
        body = dict(lines[0]["request"], model=name, thinking={"enabled": False})
        check_reference_request(server, body, lines[0], "thinking disabled", TOLERANCE, problems)

        many = {f"q{i}": {"type": "score", "instructions": f"Question number {i}?", "criteria": ["low", "mid", "high"]}
                for i in range(12)}
        expect_error(server, {"model": name, "state": "s", "questions": many}, 400, "max_tokens_exceeded",
                     "a schema longer than max_length", problems)
        image = {"model": name, "state": "s", "images": ["iVBORw0KGgo="],
                 "questions": {"q": {"type": "noul", "instructions": "Shown?"}}}
        expect_error(server, image, 400, "unsupported_media", "an image", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != max_length
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "linear"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift",
                                              str(TOLERANCE), "--decision-margin", "0.0001"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "clef", MODEL_DIR, check_serving, [check_validate]))
