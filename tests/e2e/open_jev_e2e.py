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

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from reference_answers import check_reference_request, expect_error, post_systemone, read_jsonl, run_validate  # noqa: E402

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
        if shared < 3:
            problems.append(f"only {shared} requests counted their state once; the fixture has 3 long shared states")

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


def validate(binary, reference, *gates):
    return run_validate(binary, MODEL_DIR, reference, *gates)


def check_validate(binary, lines, problems):
    reference = os.path.join(MODEL_DIR, "expected.jsonl")
    result = validate(binary, reference, "--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE))
    summary = json.loads(result.stdout) if result.stdout.strip() else {}
    if result.returncode != 0 or not summary.get("pass") or summary.get("questions") != 14:
        problems.append(f"validate on the reference: exit {result.returncode}, {result.stdout} {result.stderr[-500:]}")

    with tempfile.TemporaryDirectory() as temp:
        # Move the long-state request's choice to its least likely option: a wide-margin decision flip.
        tampered = json.loads(json.dumps(lines[3]))
        answer = tampered["answers"]["team"]
        loser = min(answer["probabilities"], key=answer["probabilities"].get)
        answer["probabilities"] = {k: (0.9 if k == loser else 0.1 / 3) for k in answer["probabilities"]}
        answer["choice"] = loser
        path = os.path.join(temp, "tampered.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(tampered, ensure_ascii=False) + "\n")
        result = validate(binary, path, "--max-prob-drift", "0.02")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.returncode != 1 or summary.get("pass") is not False or summary.get("decision_flips") != 1:
            problems.append(f"validate on a tampered reference: exit {result.returncode}, {result.stdout}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    with open(os.path.join(MODEL_DIR, "s1serve.json"), encoding="utf-8") as f:
        name = json.load(f)["name"]
    lines = read_jsonl(os.path.join(MODEL_DIR, "expected.jsonl"))
    s1harness.install_signal_handlers()
    problems: list[str] = []
    try:
        check_serving(binary, name, lines, problems)
    finally:
        s1harness.Server.stop_all()
    check_validate(binary, lines, problems)
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    print(f"open-jev e2e: {len(lines)} reference requests, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
