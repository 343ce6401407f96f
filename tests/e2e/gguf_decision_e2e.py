#!/usr/bin/env python3
"""End to end: a GGUF whose <arch>.decision.type names one of llama.cpp's decision types is served
with that type's prompt, readout and maths.

tests/fixtures/gguf/decision/tiny-qwen3-<type>.gguf (tools/reference/make_gguf_decision_fixtures.py)
are the tiny Qwen3 GGUF with the decision keys of openjev, lev, nimble, pplx-decider and lfm2-d1,
and tiny-lfm2-lfm2-d1.gguf lfm2-d1 on the LFM2 architecture as llama.cpp's converter writes it;
every request of tests/e2e/gguf_decision_requests.jsonl must get the answers and input_tokens that
the Python reference of each type (tools/reference/gguf_decision_contract.py) recorded in
expected.json; the same request again reuses its prefix from the prefix cache with
unchanged answers; and more options than openjev's 52 letters is 400 too_many_options. (The load errors
are in tests/unit/model/gguf_model_test.cpp.)

    python3 tests/e2e/gguf_decision_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from gguf_e2e import post  # noqa: E402
from minilm_e2e import TOLERANCE  # noqa: E402
from reference_answers import check_reference_request, read_jsonl  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "gguf", "decision")
# served name → (stand-in file stem, key of expected.json)
STAND_INS = {kind: (f"tiny-qwen3-{kind}", kind) for kind in ("openjev", "lev", "nimble", "pplx-decider", "lfm2-d1")}
STAND_INS["lfm2-lfm2-d1"] = ("tiny-lfm2-lfm2-d1", "lfm2/lfm2-d1")


def copy_with_decision_file(work, stem, decision):
    path = os.path.join(work, f"{stem}.gguf")
    shutil.copyfile(os.path.join(FIXTURES, f"{stem}.gguf"), path)
    with open(os.path.join(work, f"{stem}.s1serve.json"), "w") as f:
        json.dump(decision, f)
    return path


def check_prefix_cache(server, body, name, problems):
    """The same request again finds its shared prefix in the prefix cache: counted in usage, and the
    answers are exactly those of the first run."""
    first = post(server, body).json()
    again = post(server, body).json()
    cached = again["usage"].get("cached_tokens", 0)
    if not 0 < cached < again["usage"]["input_tokens"]:
        problems.append(f"{name}: repeated request's usage {again['usage']}, expected cached_tokens")
    if again["answers"] != first["answers"]:
        problems.append(f"{name}: answers changed with the cached prefix: {again['answers']} vs {first['answers']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    problems = []
    requests = read_jsonl(os.path.join(HERE, "gguf_decision_requests.jsonl"))
    with open(os.path.join(FIXTURES, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    work = tempfile.mkdtemp(prefix="s1-gguf-decision-e2e-")
    try:
        served = []
        for name, (stem, _) in STAND_INS.items():
            served += ["--model", copy_with_decision_file(work, stem, {"precision": "fp32", "name": name})]
        with s1harness.Server(args.binary, served + ["--port", "0"], name="gguf-decision") as server:
            for name, (_, expected_key) in STAND_INS.items():
                for number, request in enumerate(requests):
                    check_reference_request(server, dict(request, model=name), expected[expected_key][number],
                                            f"{name} request {number}", TOLERANCE, problems)
            repeated = next(request for request in requests if len(request["questions"]) > 1)
            for name in STAND_INS:
                check_prefix_cache(server, dict(repeated, model=name), name, problems)
            letters = {f"option {i}": None for i in range(53)}
            body = {"model": "openjev", "state": "x", "questions": {"q": {"type": "choice", "criteria": letters}}}
            response = post(server, body)
            if response.status != 400 or "too_many_options" not in response.body.decode("utf-8", "replace"):
                problems.append(f"openjev with 53 options: status {response.status}: {response.body[:200]!r}")

    finally:
        shutil.rmtree(work, ignore_errors=True)

    for problem in problems:
        print("FAIL:", problem)
    print(f"gguf decision e2e: {len(STAND_INS)} stand-ins x {len(requests)} requests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
