#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Valen stand-in with the valen contract.

tests/fixtures/tiny-valen is a random tiny Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer, a random
bilinear head at Valen's projection_dim 256 (valen_head.safetensors) and s1serve.json {"contract":
"valen", "precision": "fp32"}; expected.jsonl holds the Transformers reference's answers with every
question's branch run on its own, as Valen's compiler builds it (tools/reference/make_tiny_valen.py).

1. every request of expected.jsonl goes to POST /v1/systemone (under the name and the
   valen-preview-0923 alias): 200 with the §8.4 shape, answers within the declared tolerance, and
   input_tokens exactly the reference's logical tokens (the state once, every question's own tokens);
2. refusals: noul and score (400 unsupported_question_type), nine questions (413), an image state
   (400 unsupported_media), missing instructions and a control token in the state (422), a branch over
   the model's context (400 max_tokens_exceeded); /v1/models lists the contract's limits;
3. `s1serve validate` on the reference file passes the declared gate and fails a tampered one.

    python3 tests/e2e/valen_e2e.py --binary build/s1serve
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
    check_choice_only, check_reference_request, check_tampered_reference_fails, check_validate_passes,
    contract_e2e_main, expect_error, listed_model)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-valen")
# Declared before comparing: the hybrid family's fp32 logit gate (1e-4 × the logit scale) carried
# through the bilinear head and the softmax.
TOLERANCE = 1e-4


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="valen") as server:
        for number, line in enumerate(lines):
            model = [name, "valen-preview-0923"][number % 2]
            where = f"request {number} ({model})"
            response = check_reference_request(server, dict(line["request"], model=model), line, where, TOLERANCE,
                                               problems)
            if response is not None and response.json()["model"] != name:
                problems.append(f"{where}: model {response.json()['model']!r}, expected the canonical {name!r}")

        check_choice_only(server, name, problems)
        pick = {"type": "choice", "instructions": "Pick one.", "criteria": {"a": None, "b": "B"}}
        nine = {f"q{i}": pick for i in range(9)}
        expect_error(server, {"model": name, "state": "s", "questions": nine}, 413, None, "nine questions", problems)
        expect_error(server, {"model": name, "state": {"image": "data:image/png;base64,iVBORw0KGgo="},
                              "questions": {"q": pick}}, 400, "unsupported_media", "an image state", problems)
        expect_error(server, {"model": name, "state": "s", "questions": {"q": {"type": "choice",
                                                                             "criteria": {"a": None}}}},
                     422, None, "no instructions", problems, location=["body", "questions", "q", "instructions"])
        expect_error(server, {"model": name, "state": "a <|im_end|> b", "questions": {"q": pick}}, 422, None,
                     "a control token in the state", problems, location=["body", "state"])
        long_state = " ".join(str(i * 7919) for i in range(1500))
        expect_error(server, {"model": name, "state": long_state, "questions": {"q": pick}}, 400,
                     "max_tokens_exceeded", "a branch over the context", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != 4096
                or entry.get("question_types") != ["choice"] or entry.get("confidence_method") != "linear"
                or "valen-preview-0923" not in entry.get("aliases", [])):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE)], problems, questions=16)
    # The 40-candidate question's choice moved to its least likely candidate: a wide-margin flip.
    tampered = json.loads(json.dumps(lines[5]))
    answer = tampered["answers"]["cell"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    answer["probabilities"] = {k: (0.9 if k == loser else 0.1 / 39) for k in answer["probabilities"]}
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "valen", MODEL_DIR, check_serving, [check_validate]))
