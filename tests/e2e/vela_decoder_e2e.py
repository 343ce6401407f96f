#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Vela 2.0 0.8B stand-in with the vela-0.8b contract.

tests/fixtures/tiny-vela-decoder is a random tiny Qwen3.5 checkpoint, the tiny Qwen3.5 tokenizer, a random
candidate head at the release's head_dim 256 (vela_heads.safetensors), the released temperatures and
s1serve.json {"contract": "vela-0.8b", "max_length": 1200}; expected.jsonl holds the Transformers + torch
reference's answers with every question's block run on its own after the parts
(tools/reference/make_tiny_vela_decoder.py), so serving the request as one tree must equal it.

1. every request of expected.jsonl goes to POST /v1/systemone (under the name and the vela-2.0-0.8b
   alias): 200, answers within the declared tolerance, input_tokens exactly the reference's (the parts
   once plus every block), the long state cut as the reference cuts it;
2. refusals: span and set questions (422 at the question's type, as for every model), questions alone
   over max_length (400 max_tokens_exceeded); /v1/models lists the contract's limits;
3. `s1serve validate` on the reference file passes the declared gate and fails a tampered one.

    python3 tests/e2e/vela_decoder_e2e.py --binary build/s1serve
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
    check_reference_request, check_span_and_set_refused, check_tampered_reference_fails, check_validate_passes,
    contract_e2e_main, expect_error, listed_model)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-vela-decoder")
# Declared before comparing: the hybrid family's fp32 logit gate (1e-4 × the logit scale) through the
# candidate head and the softmax.
TOLERANCE = 1e-4


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="vela-decoder") as server:
        for number, line in enumerate(lines):
            model = [name, "vela-2.0-0.8b"][number % 2]
            check_reference_request(server, dict(line["request"], model=model), line, f"request {number} ({model})",
                                    TOLERANCE, problems)

        check_span_and_set_refused(server, name, problems)
        many = {f"q{i}": {"type": "noul", "instructions": "Is it fine?"} for i in range(12)}
        expect_error(server, {"model": name, "state": "short", "questions": many}, 400, "max_tokens_exceeded",
                     "questions alone over max_length", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != 1200
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "top2_margin" or "vela-2.0-0.8b" not in entry.get("aliases", [])):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE)], problems, questions=14)
    # The first request's choice moved to its least likely option: a wide-margin flip.
    tampered = json.loads(json.dumps(lines[0]))
    answer = tampered["answers"]["domain"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    answer["probabilities"] = {k: (0.9 if k == loser else 0.05) for k in answer["probabilities"]}
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "vela-decoder", MODEL_DIR, check_serving, [check_validate]))
