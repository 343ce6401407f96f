#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny CLM stand-in with the clm contract.

tests/fixtures/tiny-clm is a random tiny Qwen3 encoder with random CLM heads converted by
tools/convert_clm_heads.py; expected.jsonl holds the Transformers + torch reference's answers
(tools/reference/make_tiny_clm.py, tools/reference/clm_contract.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly and its answers within 1e-5;
2. the same requests again, now answered from the candidate cache (and in another order, so that
   questions meet candidates cached by other requests): the same answers and input_tokens, usage
   adding the state prefix reused from the prefix cache as cached_tokens;
3. refusals: a choice option whose description renders empty (422 at its criteria location), a state
   over the 512-token text window (400 max_tokens_exceeded); /v1/models lists the model with all three
   question types, 255 options, the window and top-minus-mean confidence;
4. `s1serve validate` on the reference file passes tight gates.

    python3 tests/e2e/clm_e2e.py --binary build/s1serve
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
    check_reference_request, check_validate_passes, contract_e2e_main, expect_error, listed_model, post_systemone)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-clm")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="clm") as server:
        first = {}
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            response = check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)
            if response is not None:
                first[number] = response.body

        # Every candidate is cached now, and every state prefix: neither cache may change a byte of
        # the answers or input_tokens; usage adds the reused state tokens as cached_tokens.
        reused = 0
        for number in reversed(range(len(lines))):
            if number not in first:
                continue  # refused (and reported, or expected) the first time
            response = post_systemone(server, dict(lines[number]["request"], model=name))
            again = json.loads(response.body) if response.status == 200 else None
            cached = again["usage"].pop("cached_tokens", 0) if again is not None else 0
            if again != json.loads(first[number]) or not 0 <= cached < again["usage"]["input_tokens"]:
                problems.append(f"request {number} from the cache: {response.status} {response.body[:300]!r} "
                                f"vs {first.get(number, b'')[:300]!r}")
            reused += cached > 0
        if reused == 0:
            problems.append("no repeated request reused its state prefix (usage.cached_tokens)")

        empty = {"type": "choice", "instructions": "Pick", "criteria": {"a": None, "b": {}}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": empty}}, 422, None,
                     "an option rendering empty", problems, location=["body", "questions", "q", "criteria", "b"])
        long_state = " ".join(f"word{i}" for i in range(600))
        expect_error(server, {"model": name, "state": long_state, "questions": {"q": {"type": "noul", "instructions": "Long?"}}},
                     400, "max_tokens_exceeded", "a state over the text window", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != 512
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "top_minus_mean"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--decision-margin", "0.0001"],
                          problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "clm", MODEL_DIR, check_serving, [check_validate]))
