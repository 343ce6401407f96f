"""What the contract e2e tests share: a reference file's JSON lines, POST /v1/systemone, an answer
compared with the reference's within a tolerance, an expected refusal, `s1serve validate` (on the
model's own reference and on a tampered one), and the tests' main().

Import after tests/conformance is on sys.path (s1harness lives there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import s1harness


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def post_systemone(server, body, timeout=120.0):
    return s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=timeout)


def _close(where, name, got, expected, tolerance, problems):
    # bool is an int to Python, and a true/false where a probability belongs is a wrong answer.
    if isinstance(got, bool) or not isinstance(got, (int, float)) or abs(got - expected) > tolerance:
        problems.append(f"{where}: {name} {got} vs reference {expected}")


def compare_answer(where, expected, got, tolerance, problems):
    """One answer against the reference's: type, choice, noul, score and its legend, confidence, and
    every probability in the reference's order. Members the reference does not hold are not checked."""
    if got.get("type") != expected["type"]:
        problems.append(f"{where}: type {got.get('type')} vs reference {expected['type']}")
        return
    if expected["type"] == "noul":
        _close(where, "noul", got.get("noul"), expected["noul"], tolerance, problems)
        return
    if expected["type"] == "choice" and got.get("choice") != expected["choice"]:
        problems.append(f"{where}: choice {got.get('choice')!r} vs reference {expected['choice']!r}")
    if "score" in expected:
        _close(where, "score", got.get("score"), expected["score"], tolerance, problems)
    if "legend" in expected and got.get("legend") != expected["legend"]:
        problems.append(f"{where}: legend {got.get('legend')} vs reference {expected['legend']}")
    if "confidence" in expected:
        _close(where, "confidence", got.get("confidence"), expected["confidence"], tolerance, problems)
    if list(got.get("probabilities", {})) != list(expected["probabilities"]):
        problems.append(f"{where}: probability keys {list(got.get('probabilities', {}))[:5]}")
        return
    for name, p in expected["probabilities"].items():
        _close(where, f"p[{name}]", got["probabilities"][name], p, tolerance, problems)


def expect_error(server, body, status, error_type, where, problems, location=None, timeout=120.0):
    """The request is refused with `status`; with `error_type`, an error envelope of that type; with
    `location`, a validation issue whose first entry sits at that loc."""
    response = post_systemone(server, body, timeout)
    detail = response.json().get("detail") if response.status != 200 else None
    if response.status != status:
        problems.append(f"{where}: {response.status} {response.body[:300]!r}, expected {status} {error_type or ''}")
    elif error_type is not None and (not isinstance(detail, dict) or detail.get("error_type") != error_type):
        problems.append(f"{where}: {detail}, expected {error_type}")
    elif location is not None and (not isinstance(detail, list) or not detail or detail[0].get("loc") != location):
        problems.append(f"{where}: {detail}, expected an issue at {location}")


def listed_model(server, name):
    """The /v1/models entry named `name`, or None."""
    listed = s1harness.request(server, "GET", "/v1/models").json()
    return next((m for m in listed.get("models", []) if m.get("name") == name), None)


def check_choice_only(server, name, problems):
    """noul and score questions, alone and beside a choice question: 400 unsupported_question_type."""
    pick = {"type": "choice", "criteria": {"a": None, "b": "Click B"}}
    for kind, question in (("noul", {"type": "noul", "instructions": "Yes?"}), ("score", {"type": "score", "criteria": ["lo", "hi"]})):
        expect_error(server, {"model": name, "state": "s", "questions": {"q": question}}, 400,
                     "unsupported_question_type", kind, problems)
        expect_error(server, {"model": name, "state": "s", "questions": {"c": pick, "q": question}}, 400,
                     "unsupported_question_type", f"choice + {kind}", problems)


def check_span_and_set_refused(server, name, problems):
    """Vela's span and set questions: 422 at the question's type, as the API refuses them for every model."""
    for kind in ("span", "set"):
        question = {"type": kind, "instructions": "Which spans are personal information?",
                    "criteria": {"PERSON": "a person's name"}}
        expect_error(server, {"model": name, "state": "Hi, I'm Tom", "questions": {"pii": question}}, 422, None,
                     f"a {kind} question", problems, location=["body", "questions", "pii", "type"])


def run_validate(binary, model_dir, reference, *gates, timeout=600):
    return subprocess.run([binary, "validate", "--model", model_dir, "--reference", reference, *gates],
                          capture_output=True, text=True, timeout=timeout)


def check_validate_passes(binary, model_dir, gates, problems, questions=None, where="validate on the reference"):
    """`s1serve validate` of the model against its own expected.jsonl under `gates`: a problem unless it
    passes, having checked `questions` questions when that is given."""
    result = run_validate(binary, model_dir, os.path.join(model_dir, "expected.jsonl"), *gates)
    summary = json.loads(result.stdout) if result.stdout.strip() else {}
    if (result.returncode != 0 or not summary.get("pass")
            or (questions is not None and summary.get("questions") != questions)):
        problems.append(f"{where}: exit {result.returncode}, {result.stdout} {result.stderr[-500:]}")


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def validate_tampered(binary, model_dir, tampered_line, *gates):
    """`s1serve validate` of the model against a reference holding only `tampered_line`: the process
    result and its JSON summary ({} when it printed none)."""
    with tempfile.TemporaryDirectory() as temp:
        path = os.path.join(temp, "tampered.jsonl")
        write_jsonl(path, [tampered_line])
        result = run_validate(binary, model_dir, path, *gates)
    return result, (json.loads(result.stdout) if result.stdout.strip() else {})


def check_tampered_reference_fails(binary, model_dir, tampered_line, gates, problems):
    """A reference line whose decision was moved to another option: validate must fail (exit 1) with
    exactly one decision flip. Returns the summary for further checks."""
    result, summary = validate_tampered(binary, model_dir, tampered_line, *gates)
    if result.returncode != 1 or summary.get("pass") is not False or summary.get("decision_flips") != 1:
        problems.append(f"validate on a tampered reference: exit {result.returncode}, {result.stdout}")
    return summary


def contract_e2e_main(doc, label, model_dir, check_serving, checks_after_serving=()):
    """A contract e2e test's main(): parses --binary, runs `check_serving(binary, name, lines, problems)`
    with the model's name and reference lines (servers stopped however it ends), then each
    `check(binary, lines, problems)` of `checks_after_serving`; prints the problems, exit 1 on any."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    with open(os.path.join(model_dir, "s1serve.json"), encoding="utf-8") as f:
        name = json.load(f)["name"]
    lines = read_jsonl(os.path.join(model_dir, "expected.jsonl"))
    s1harness.install_signal_handlers()
    problems: list[str] = []
    try:
        check_serving(binary, name, lines, problems)
    finally:
        s1harness.Server.stop_all()
    for check in checks_after_serving:
        check(binary, lines, problems)
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    print(f"{label} e2e: {len(lines)} reference requests, {len(problems)} problem(s)")
    return 1 if problems else 0


def empty_noul_keys(body):
    """Keys of the noul questions with no instructions and no described side (contract §11.1)."""
    keys = []
    for key, question in body.get("questions", {}).items():
        criteria = question.get("criteria") if isinstance(question, dict) else None
        if (isinstance(question, dict) and question.get("type") == "noul" and question.get("instructions") is None
                and (criteria is None or (isinstance(criteria, dict) and all(v is None for v in criteria.values())))):
            keys.append(key)
    return keys


def check_reference_request(server, body, line, where, tolerance, problems, known_shape_problems=()):
    """Posts one reference-file request and checks the 200's shape, input_tokens and every answer
    against the reference line; the response, or None when the status was not 200. Shape problems
    containing any of `known_shape_problems` (a model's documented deviation) are not reported.
    A request recorded under contract v1 with a noul that has neither instructions nor criteria is
    refused at the wire since §11.1 (422 missing at its instructions; `s1serve validate` still
    replays it): that refusal is checked instead, and None returned."""
    response = post_systemone(server, body)
    empty = empty_noul_keys(body)
    if empty:
        expected = ["body", "questions", empty[0], "instructions"]
        detail = response.json().get("detail") if response.status == 422 else None
        if not (isinstance(detail, list) and detail and detail[0].get("type") == "missing"
                and detail[0].get("loc") == expected):
            problems.append(f"{where}: an empty noul got {response.status}: {response.body[:300]!r}, expected 422 "
                            f"missing at {expected}")
        return None
    if response.status != 200:
        problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
        return None
    shape = []
    s1harness.check_systemone_200(body, response, shape)
    problems += [f"{where}: {p}" for p in shape if not any(known in p for known in known_shape_problems)]
    got = response.json()
    if got["usage"]["input_tokens"] != line["input_tokens"]:
        problems.append(f"{where}: input_tokens {got['usage']} vs reference {line['input_tokens']}")
    for key, answer in line["answers"].items():
        compare_answer(f"{where}/{key}", answer, got["answers"][key], tolerance, problems)
    return response
