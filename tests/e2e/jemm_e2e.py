#!/usr/bin/env python3
"""End to end: the real s1serve binary serves the tiny JEMM stand-in with the jemm contract.

tests/fixtures/tiny-jemm is a random tiny untied Qwen3.5 checkpoint with the tiny Qwen3.5 tokenizer
and chat template, the 32 label rows in jemm_lm_head.safetensors and s1serve.json {"contract": "jemm",
"precision": "fp32"}; expected.jsonl holds the Transformers reference's answers and limits.json two
states whose prompt is exactly 8,192 and 8,193 tokens (tools/reference/make_tiny_jemm.py).

1. every request of expected.jsonl goes to POST /v1/systemone: 200 with the §8.4 shape, the
   reference's input_tokens exactly and its answers within 1e-5 (choice, noul, score);
2. images (top-level `images`, an image part in the state): 400 unsupported_media; 33 candidates:
   400 too_many_options; an 8,193-token prompt: 400 max_tokens_exceeded while 8,192 tokens answer;
   /v1/models lists the model with 32 options, all three types and max_probability confidence;
3. `s1serve validate` on the reference file passes tight gates (exit 0, no flips) and fails on a
   tampered reference (exit 1);
4. the stand-in with the PEFT adapter of tests/fixtures/tiny-jemm-lora (applied unmerged): validate
   passes against the adapter's reference within 1e-4 (fp32 rounding order can move a logit by one
   BF16 step) and fails against the adapter-free reference.

    python3 tests/e2e/jemm_e2e.py --binary build/s1serve
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
    listed_model, post_systemone, run_validate)

MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-jemm")
TOLERANCE = 1e-5


LORA_DIR = os.path.join(ROOT, "tests", "fixtures", "tiny-jemm-lora")


def check_serving(binary, name, lines, problems):
    with s1harness.Server(binary, ["--model", MODEL_DIR, "--port", "0"], name="jemm") as server:
        for number, line in enumerate(lines):
            # The shape check holds usage to exactly input_tokens and output_tokens 0.
            check_reference_request(server, dict(line["request"], model=name), line, f"request {number}", TOLERANCE,
                                    problems)

        pick = {"type": "choice", "criteria": {"a": None, "b": "Click B"}}
        plain = {"model": name, "state": "s", "questions": {"q": pick}}
        expect_error(server, dict(plain, images=["iVBORw0KGgo="]), 400, "unsupported_media", "images", problems)
        image_part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        expect_error(server, dict(plain, state=["look:", image_part]), 400, "unsupported_media", "image part",
                     problems)
        many = {"type": "choice", "criteria": {f"o{i}": None for i in range(33)}}
        expect_error(server, {"model": name, "state": "s", "questions": {"c": pick, "q": many}}, 400,
                     "too_many_options", "33 candidates", problems)

        with open(os.path.join(MODEL_DIR, "limits.json"), encoding="utf-8") as f:
            limits = json.load(f)
        fits = post_systemone(server, {"model": name, "state": limits["fits"], "questions": {"q": limits["question"]}})
        if fits.status != 200 or fits.json()["usage"]["input_tokens"] != 8192:
            problems.append(f"8,192-token prompt: {fits.status} {fits.body[:200]!r}")
        expect_error(server, {"model": name, "state": limits["too_long"], "questions": {"q": limits["question"]}},
                     400, "max_tokens_exceeded", "8,193-token prompt", problems)

        entry = listed_model(server, name)
        if (entry is None or entry.get("max_choice_options") != 32
                or entry.get("question_types") != ["choice", "noul", "score"]
                or entry.get("confidence_method") != "max_probability" or entry.get("context_tokens") != 8192):
            problems.append(f"/v1/models entry {entry}")


def check_validate(binary, lines, problems):
    check_validate_passes(binary, MODEL_DIR, ["--max-prob-drift", str(TOLERANCE), "--max-score-drift", str(TOLERANCE),
                                              "--decision-margin", "0.0001"],
                          problems, questions=sum(len(line["answers"]) for line in lines))

    # Swap the first choice's probabilities between its winner and its loser: a drift well over the
    # gate and a decision flip.
    tampered = json.loads(json.dumps(lines[0]))
    answer = tampered["answers"]["action"]
    winner = answer["choice"]
    loser = min(answer["probabilities"], key=answer["probabilities"].get)
    probabilities = answer["probabilities"]
    probabilities[winner], probabilities[loser] = probabilities[loser], probabilities[winner]
    answer["choice"] = loser
    check_tampered_reference_fails(binary, MODEL_DIR, tampered,
                                   ["--max-prob-drift", "0.02", "--decision-margin", "0.0001"], problems)


def check_adapter(binary, problems):
    with tempfile.TemporaryDirectory() as temp:
        model_dir = os.path.join(temp, "tiny-jemm-with-adapter")
        shutil.copytree(MODEL_DIR, model_dir)
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            shutil.copy(os.path.join(LORA_DIR, name), model_dir)
        result = run_validate(binary, model_dir, os.path.join(LORA_DIR, "expected.jsonl"), "--max-prob-drift", "1e-4",
                              "--max-score-drift", "1e-4", "--decision-margin", "0.0001")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.returncode != 0 or not summary.get("pass"):
            problems.append(f"validate with the adapter: exit {result.returncode}, {result.stdout} {result.stderr[-500:]}")
        result = run_validate(binary, model_dir, os.path.join(MODEL_DIR, "expected.jsonl"), "--max-prob-drift", "1e-4")
        summary = json.loads(result.stdout) if result.stdout.strip() else {}
        if result.returncode != 1 or not summary.get("max_prob_drift", 0) > 0.05:
            problems.append(f"the adapter hardly changes the answers: exit {result.returncode}, {result.stdout}")


if __name__ == "__main__":
    sys.exit(contract_e2e_main(__doc__, "jemm", MODEL_DIR, check_serving, [check_validate, lambda binary, lines, problems: check_adapter(binary, problems)]))
