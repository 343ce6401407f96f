#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny Open-Jev stand-in with the open-jev contract.

tests/fixtures/tiny-open-jev is a random tiny Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer, an
open_jev_export.json (random scalar head, Open-Jev-27B-v1.1's temperature, max_length 512) and
s1serve.json {"contract": "open-jev", "precision": "fp32"}; expected.jsonl holds the Transformers
reference's answers with every candidate sequence run on its own, as upstream runs them
(tools/reference/make_tiny_open_jev.py).

1. every request of expected.jsonl goes to POST /v1/systemone (under the name and the open-jev and
   jev-latest aliases): 200 with the §8.4 shape, answers within the declared tolerances, and
   input_tokens exactly the reference's count of the shared prefix once plus every candidate's own
   tokens: below the independent runs' total wherever the state is long enough to share;
2. the same state asked one and then two questions costs far less than twice the tokens;
3. refusals: a candidate over max_length and a request over the token budget (400
   max_tokens_exceeded), 256 options (422); /v1/models lists the contract's limits;
4. `s1serve validate` on the reference file passes the declared gates and fails a tampered one.

    python3 tests/e2e/open_jev_e2e.py --binary build/s1serve
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
    check_reference_request, check_tampered_reference_fails, check_validate_passes, contract_e2e_main,
    empty_noul_keys, expect_error, post_systemone)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-open-jev")
# Declared before comparing: the hybrid family's fp32 logit gate (1e-4 × the logit scale) carried
# through the scalar head and the calibrated softmax, for probabilities, confidences and scores alike.
TOLERANCE = 1e-4


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="open-jev") as server:
        shared = 0
        for number, line in enumerate(lines):
            # Every model name the contract answers to: the name, then the open-jev and jev-latest aliases.
            model = [name, "open-jev", "jev-latest"][number % 3]
            where = f"request {number} ({model})"
            response = check_reference_request(server, dict(line["request"], model=model), line, where, TOLERANCE,
                                               problems)
            if response is None:
                continue
            got = response.json()
            if got["model"] != name:
                problems.append(f"{where}: model {got['model']!r}, expected the canonical {name!r}")
            if got["usage"]["input_tokens"] < line["independent_tokens"]:
                shared += 1
        # The long-state request with an empty noul is refused at the wire since contract §11.1.
        long_states = 3 - sum(1 for line in lines if empty_noul_keys(line["request"]))
        if shared < long_states:
            problems.append(f"only {shared} requests counted their state once; the fixture has {long_states} long "
                            "shared states served")

        # The same long state with one question and then with two: the state is evaluated once.
        state = lines[3]["request"]["state"]
        one = {"model": name, "state": state, "questions": {"a": {"type": "noul", "instructions": "Refund?"}}}
        two = {"model": name, "state": state, "questions": {"a": one["questions"]["a"],
                                                          "b": {"type": "noul", "instructions": "Escalate?"}}}
        tokens_one = post_systemone(server, one).json()["usage"]["input_tokens"]
        tokens_two = post_systemone(server, two).json()["usage"]["input_tokens"]
        if not tokens_two < 2 * tokens_one - 300:
            problems.append(f"input_tokens {tokens_one} for one question, {tokens_two} for two: state not shared")

        long_state = ", ".join(str(i * 7919) for i in range(400))
        pick = {"type": "choice", "criteria": {"a": None, "b": "B"}}
        expect_error(server, {"model": name, "state": long_state, "questions": {"q": pick}}, 400,
                     "max_tokens_exceeded", "a candidate over max_length", problems)
        wide = {"type": "choice", "instructions": "Pick one.", "criteria": {f"option {i}": None for i in range(255)}}
        expect_error(server, {"model": name, "state": "s", "questions": {f"q{i}": wide for i in range(20)}}, 400,
                     "max_tokens_exceeded", "5,100 candidates over the token budget", problems)
        too_wide = {"type": "choice", "criteria": {f"o{i}": None for i in range(256)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": too_wide}}, 422, None,
                     "256 options", problems, location=["body", "questions", "q", "criteria"])

        listed = s1harness.request(server, "GET", "/v1/models").json()
        entry = next((m for m in listed.get("models", []) if m.get("name") == name), None)
        if (entry is None or entry.get("max_choice_options") != 255 or entry.get("context_tokens") != 512
                or sorted(entry.get("question_types", [])) != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "linear"
                or entry.get("aliases") != ["open-jev", "jev-latest", "tiny-open-jev-27b-v1.1"]):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE)],
                          problems, questions=14)

    # Move the long-state request's choice to its least likely option: a wide-margin decision flip.
    tampered = json.loads(json.dumps(lines[3]))
    answer = tampered["answers"]["team"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    answer["probabilities"] = {k: (0.9 if k == loser else 0.1 / 3) for k in answer["probabilities"]}
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "open-jev", MODEL_DIR, check_serving, [check_validate]))
