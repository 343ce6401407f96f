#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny D3 and pplx-decider stand-ins (code-readout contracts).

tests/fixtures/tiny-d3 and tests/fixtures/tiny-pplx are random bare Qwen3_5Model backbones with a
readout.safetensors and a decision_config.json (noncausal full attention, a non-unit temperature) and
s1serve.json naming the d3 / pplx-decider contract in fp32; expected.jsonl holds the Transformers
reference's answers (tools/reference/make_tiny_d3.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly (every question's full prompt) and its answers within 1e-5;
2. refusals: a state over tiny-d3's max_length (1024 tokens) gets 400 max_tokens_exceeded, never a
   truncated answer; /v1/models lists all three question types, 255 options, linear confidence and
   the declared context;
3. `s1serve validate` on each reference file passes tight gates and fails on a tampered reference;
4. a package whose decision_config.json names an unknown attention mode stops start-up with an
   error naming the file and the key.

    python3 tests/e2e/d3_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from reference_answers import (  # noqa: E402
    check_reference_request, expect_error, listed_model, read_jsonl, run_validate)

FIXTURES = {name: os.path.join(ROOT, "tests", "fixtures", name) for name in ("tiny-d3", "tiny-pplx")}
TOLERANCE = 1e-5


def check_serving(binary, fixture, problems):
    model_dir = FIXTURES[fixture]
    with s1harness.Server(binary, ["--model", model_dir, "--port", "0"], name=fixture) as server:
        for number, line in enumerate(read_jsonl(os.path.join(model_dir, "expected.jsonl"))):
            body = dict(line["request"], model=fixture)
            check_reference_request(server, body, line, f"{fixture} request {number}", TOLERANCE, problems)

        decision = json.load(open(os.path.join(model_dir, "decision_config.json")))
        entry = listed_model(server, fixture)
        context = decision.get("max_length") or 4096
        if (entry is None or entry.get("max_choice_options") != 255
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "linear" or entry.get("context_tokens") != context):
            problems.append(f"{fixture}: /v1/models entry {entry}")

        if fixture == "tiny-d3":
            # One token per digit and per space: about 1,600 tokens, over max_length 1024.
            long_state = " ".join(str(i % 10) for i in range(800))
            noul = {"type": "noul", "instructions": "Long?"}
            for questions in ({"q": noul}, {"short": {"type": "choice", "criteria": {"a": None}}, "q": noul}):
                expect_error(server, {"model": fixture, "state": long_state, "questions": questions}, 400,
                             "max_tokens_exceeded", f"over-length state, questions {list(questions)}", problems)


def check_validate(binary, fixture, problems):
    model_dir = FIXTURES[fixture]
    reference = os.path.join(model_dir, "expected.jsonl")
    lines = read_jsonl(reference)
    questions = sum(len(line["answers"]) for line in lines)
    result = run_validate(binary, model_dir, reference, "--max-prob-drift", str(TOLERANCE), "--max-score-drift",
                          str(TOLERANCE), "--decision-margin", "0.0001")
    summary = json.loads(result.stdout) if result.stdout.strip() else {}
    if result.returncode != 0 or not summary.get("pass") or summary.get("questions") != questions:
        problems.append(f"{fixture} validate on the reference: exit {result.returncode}, {result.stdout} "
                        f"{result.stderr[-500:]}")
    with tempfile.TemporaryDirectory() as temp:
        # The first choice answer of the first request moved to its losing option: drift and a flip.
        tampered = json.loads(json.dumps(lines[0]))
        key, answer = next((k, a) for k, a in tampered["answers"].items() if a["type"] == "choice")
        loser = min(answer["probabilities"], key=answer["probabilities"].get)
        for name in answer["probabilities"]:
            answer["probabilities"][name] = 0.0
        answer["probabilities"][loser] = 1.0
        answer["choice"] = loser
        path = os.path.join(temp, "tampered.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(tampered, ensure_ascii=False) + "\n")
        result = run_validate(binary, model_dir, path, "--max-prob-drift", "0.02")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.returncode != 1 or summary.get("pass") is not False or summary.get("decision_flips") != 1:
            problems.append(f"{fixture} validate on a tampered reference ({key}): exit {result.returncode}, "
                            f"{result.stdout}")


def check_bad_package(binary, problems):
    with tempfile.TemporaryDirectory() as temp:
        model_dir = os.path.join(temp, "broken-d3")
        shutil.copytree(FIXTURES["tiny-d3"], model_dir)
        config_path = os.path.join(model_dir, "decision_config.json")
        config = json.load(open(config_path))
        config["attention_mode"] = "sliding_window"
        with open(config_path, "w") as f:
            json.dump(config, f)
        result = subprocess.run([binary, "serve", "--model", model_dir, "--port", "0"], capture_output=True,
                                text=True, timeout=120)
        output = result.stdout + result.stderr
        if result.returncode == 0 or "decision_config.json" not in output or "attention_mode" not in output:
            problems.append(f"bad attention_mode: exit {result.returncode}, {output[-400:]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    s1harness.install_signal_handlers()
    problems: list[str] = []
    try:
        for fixture in FIXTURES:
            check_serving(binary, fixture, problems)
    finally:
        s1harness.Server.stop_all()
    for fixture in FIXTURES:
        check_validate(binary, fixture, problems)
    check_bad_package(binary, problems)
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    print(f"d3 e2e: {len(FIXTURES)} stand-ins, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
