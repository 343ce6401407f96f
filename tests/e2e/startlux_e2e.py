#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny StartLux-Decision stand-in (startlux-instant contract).

tests/fixtures/tiny-startlux is a random tiny Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer and
chat template, a decision_config.json in the real checkpoint's format and s1serve.json
{"contract": "startlux-instant", "precision": "fp32"}; expected.jsonl holds the Transformers
reference's answers (tools/reference/make_tiny_startlux.py), among them choices of 26, 27, 40, 60 and
255 options (wide-choice rounds, one of them recursive) and a one-option choice.

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the API's shape, the
   reference's input_tokens exactly and its answers within 1e-5;
2. refusals: images 400 unsupported_media; a choice or score without instructions and a blank option
   name 422 naming the member; /v1/models lists all three types, 255 options and the release date;
3. `s1serve validate` on the reference file passes tight gates (exit 0), fails on a tampered reference
   (exit 1); a checkpoint directory named as an AutoThink variant, and a decision_config.json whose
   letter ids disagree with the tokenizer, cannot be loaded (exit 2, naming the problem).

    python3 tests/e2e/startlux_e2e.py --binary build/s1serve
"""

from __future__ import annotations

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
from reference_answers import (  # noqa: E402
    check_reference_request, check_tampered_reference_fails, check_validate_passes, contract_e2e_main, expect_error,
    run_validate)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-startlux")
TOLERANCE = 1e-5


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="startlux") as server:
        for number, line in enumerate(lines):
            body = dict(line["request"], model=name)
            check_reference_request(server, body, line, f"request {number}", TOLERANCE, problems)

        noul = {"type": "noul", "instructions": "Is the parcel damaged?"}
        expect_error(server, {"model": name, "state": "Photo: <image>", "questions": {"q": noul},
                              "images": ["iVBORw0KGgo="]}, 400, "unsupported_media", "images", problems)
        pick = {"type": "choice", "criteria": {"a": None, "b": "Click B"}}
        expect_error(server, {"model": name, "state": "s", "questions": {"n": noul, "c": pick}}, 422, None,
                     "choice without instructions", problems, location=["body", "questions", "c", "instructions"])
        level = {"type": "score", "instructions": " ", "criteria": ["lo", "hi"]}
        expect_error(server, {"model": name, "state": "s", "questions": {"s": level}}, 422, None,
                     "score without instructions", problems, location=["body", "questions", "s", "instructions"])
        blank = {"type": "choice", "instructions": "Pick.", "criteria": {"  ": None, "b": None}}
        expect_error(server, {"model": name, "state": "s", "questions": {"b": blank}}, 422, None,
                     "blank option name", problems, location=["body", "questions", "b", "criteria", "  "])

        listed = s1harness.request(server, "GET", "/v1/models").json()
        entry = next((m for m in listed.get("models", []) if m.get("name") == name), None)
        if (entry is None or entry.get("max_choice_options") != 255
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("release_date") != "2026-10-01"):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    reference = os.path.join(MODEL_DIR, "expected.jsonl")
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE),
                                              "--decision-margin", "0.0001"],
                          problems, questions=21)

    with tempfile.TemporaryDirectory() as temp:
        # The 60-option request's winner loses most of its probability to the runner-up.
        tampered = json.loads(json.dumps(lines[7]))
        answer = tampered["answers"]["flight"]
        ranked = sorted(answer["probabilities"], key=answer["probabilities"].get, reverse=True)
        answer["probabilities"][ranked[0]], answer["probabilities"][ranked[1]] = 0.05, 0.6
        answer["choice"] = ranked[1]
        check_tampered_reference_fails(binary, MODEL_DIR, tampered, ["--max-prob-drift", "0.02"], problems)

        autothink = os.path.join(temp, "StartLux-Decision-v1.1-4B-AutoThink")
        shutil.copytree(MODEL_DIR, autothink)
        result = run_validate(binary, autothink, reference)
        if result.returncode != 2 or "AutoThink" not in result.stderr:
            problems.append(f"an AutoThink directory: exit {result.returncode}, {result.stderr[-300:]}")

        wrong = os.path.join(temp, "wrong-letters")
        shutil.copytree(MODEL_DIR, wrong)
        with open(os.path.join(wrong, "decision_config.json")) as f:
            config = json.load(f)
        config["letter_token_ids"][0], config["letter_token_ids"][1] = config["letter_token_ids"][1], config["letter_token_ids"][0]
        with open(os.path.join(wrong, "decision_config.json"), "w") as f:
            json.dump(config, f)
        result = run_validate(binary, wrong, reference)
        if result.returncode != 2 or "letter_token_ids[0]" not in result.stderr:
            problems.append(f"swapped letter ids: exit {result.returncode}, {result.stderr[-300:]}")


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "startlux", MODEL_DIR, check_serving, [check_validate]))
