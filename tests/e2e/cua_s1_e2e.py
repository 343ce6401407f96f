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
from reference_answers import check_reference_request, expect_error, read_jsonl, run_validate  # noqa: E402

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-cua-s1")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="cua-s1") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)

        pick = {"type": "choice", "criteria": {"a": None, "b": "Click B"}}
        for kind, question in (("noul", {"type": "noul"}), ("score", {"type": "score", "criteria": ["lo", "hi"]})):
            expect_error(server, {"model": name, "state": "s", "questions": {"q": question}}, 400,
                         "unsupported_question_type", kind, problems)
            expect_error(server, {"model": name, "state": "s", "questions": {"c": pick, "q": question}}, 400,
                         "unsupported_question_type", f"choice + {kind}", problems)
        many = {"type": "choice", "criteria": {f"o{i}": None for i in range(27)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"q": many}}, 400, "too_many_options",
                     "27 options", problems)

        listed = s1harness.request(server, "GET", "/v1/models").json()
        entry = next((m for m in listed.get("models", []) if m.get("name") == name), None)
        if (entry is None or entry.get("max_choice_options") != 26 or entry.get("question_types") != ["choice"]
                or entry.get("confidence_method") != "entropy"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    reference = os.path.join(MODEL_DIR, "expected.jsonl")
    result = run_validate(binary, MODEL_DIR, reference, "--max-prob-drift", str(TOLERANCE),
                          "--decision-margin", "0.0001")
    summary = json.loads(result.stdout) if result.stdout.strip() else {}
    if result.returncode != 0 or not summary.get("pass") or summary.get("questions") != 9:
        problems.append(f"validate on the reference: exit {result.returncode}, {result.stdout} {result.stderr[-500:]}")

    with tempfile.TemporaryDirectory() as temp:
        # Move probability mass in the first request to the reference's losing option: a 0.3 drift and,
        # the margin being wide, a decision flip.
        tampered = json.loads(json.dumps(lines[0]))
        answer = tampered["answers"]["pick"]
        loser = min(answer["probabilities"], key=answer["probabilities"].get)
        winner = answer["choice"]
        answer["probabilities"][loser], answer["probabilities"][winner] = 0.9, 0.1
        answer["choice"] = loser
        path = os.path.join(temp, "tampered.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(tampered, ensure_ascii=False) + "\n")
        result = run_validate(binary, MODEL_DIR, path, "--max-prob-drift", "0.02")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if (result.returncode != 1 or summary.get("pass") is not False or summary.get("decision_flips") != 1
                or not summary.get("max_prob_drift", 0) > 0.3):
            problems.append(f"validate on a tampered reference: exit {result.returncode}, {result.stdout}")
        # The same drift within a generous gate and with the flip under the decision margin passes.
        result = run_validate(binary, MODEL_DIR, path, "--max-prob-drift", "0.9", "--decision-margin", "0.95")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.returncode != 0 or summary.get("near_ties") != 1:
            problems.append(f"validate with wide gates: exit {result.returncode}, {result.stdout}")

        broken = os.path.join(temp, "broken.jsonl")
        with open(broken, "w") as f:
            f.write('{"answers": {}}\n')
        result = run_validate(binary, MODEL_DIR, broken)
        if result.returncode != 2 or "request" not in result.stderr:
            problems.append(f"validate on a line without a request: exit {result.returncode}, {result.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    name = json.load(open(os.path.join(MODEL_DIR, "s1serve.json")))["name"]
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
    print(f"cua-s1 e2e: {len(lines)} reference requests, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
