#!/usr/bin/env python3
"""End to end: the real s1serve binary serves all-MiniLM-L6-v2 decisions over HTTP.

1. `s1serve serve --config` (minilm with `"batch": {"max_requests": 16}`): every request of tests/parity/minilm/decisions.jsonl is
   sent to POST /v1/systemone; each response must pass the §8.4 shape checks, carry the reference's
   input_tokens exactly and its answers within 1e-4 (plus the wire's 4-decimal rounding).
2. The same requests all at once: batched by the model's executor (several in one encoder call,
   /metrics' s1serve_batch_requests shows batches of more than one), each answered as alone.
3. `s1serve serve --port 0` with no model at all serves the same model as the default: a request
   without "model" is answered by "minilm".

Needs the model installed (scripts/fetch-default-model); without it this test FAILS, because CI
installs it first. Standard library only; shares tests/conformance/s1harness.py.

    python3 tests/e2e/minilm_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))

import s1harness  # noqa: E402
from reference_answers import empty_noul_keys  # noqa: E402

TOLERANCE = 1e-4 + 0.5e-4  # fp32 gate + round(x, 4) on the wire


def model_dir() -> str:
    root = os.environ.get("S1SERVE_MODELS") or os.path.join(os.path.expanduser("~"), ".local", "share", "s1serve", "models")
    return os.path.join(root, "all-minilm-l6-v2")


def close(a, b) -> bool:
    return abs(float(a) - float(b)) <= TOLERANCE


def compare_answer(where, expected, got, problems):
    if expected["type"] != got.get("type"):
        problems.append(f"{where}: type {got.get('type')!r}, expected {expected['type']!r}")
        return
    if expected["type"] == "noul":
        if not close(expected["noul"], got["noul"]):
            problems.append(f"{where}: noul {got['noul']} vs reference {expected['noul']}")
        return
    for label, p in expected["probabilities"].items():
        if label not in got["probabilities"] or not close(p, got["probabilities"][label]):
            problems.append(f"{where}: p[{label}] {got['probabilities'].get(label)} vs reference {p}")
    if not close(expected["confidence"], got["confidence"]):
        problems.append(f"{where}: confidence {got['confidence']} vs reference {expected['confidence']}")
    if expected["type"] == "score" and not close(expected["score"], got["score"]):
        problems.append(f"{where}: score {got['score']} vs reference {expected['score']}")
    if expected["type"] == "choice":
        top = sorted(expected["probabilities"].values(), reverse=True)
        margin = top[0] - top[1] if len(top) > 1 else 1.0
        if (margin == 0.0 or margin >= 1e-3) and got["choice"] != expected["choice"]:
            problems.append(f"{where}: choice {got['choice']!r} vs reference {expected['choice']!r}")


def metric(text: str, sample: str) -> float | None:
    match = re.search("^" + re.escape(sample) + r" (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def check_answered(line, body, response, problems):
    where = line["id"]
    empty = empty_noul_keys(body)
    if empty:
        # Recorded under contract v1; since §11.1 a noul with neither instructions nor criteria is refused.
        expected = ["body", "questions", empty[0], "instructions"]
        detail = response.json().get("detail") if response.status == 422 else None
        if not (isinstance(detail, list) and detail and detail[0].get("loc") == expected):
            problems.append(f"{where}: an empty noul got {response.status}: {response.body[:300]!r}")
        return
    if response.status != 200:
        problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
        return
    shape: list[str] = []
    s1harness.check_systemone_200(body, response, shape)
    problems += [f"{where}: {p}" for p in shape]
    got = response.json()
    if got.get("model") != "minilm":
        problems.append(f"{where}: model {got.get('model')!r}")
    if got.get("usage", {}).get("input_tokens") != line["input_tokens"]:
        problems.append(f"{where}: input_tokens {got.get('usage')} vs reference {line['input_tokens']}")
    for key, expected in line["answers"].items():
        if key in got.get("answers", {}):
            compare_answer(f"{where}/{key}", expected, got["answers"][key], problems)


def check_bulk(server, lines, bodies, problems):
    """/v1/systemone/batch: the reference answers in order, the items batched together by the model."""
    answerable = [(line, body) for line, body in zip(lines, bodies) if not empty_noul_keys(body)][:32]
    before = s1harness.request(server, "GET", "/metrics").body.decode()
    response = s1harness.request(server, "POST", "/v1/systemone/batch",
                                 json_body={"requests": [body for _, body in answerable]}, timeout=120.0)
    if response.status != 200:
        problems.append(f"bulk: status {response.status}: {response.body[:300]!r}")
        return
    results = response.json()["results"]
    if len(results) != len(answerable):
        problems.append(f"bulk: {len(results)} results for {len(answerable)} items")
        return
    for (line, body), result in zip(answerable, results):
        where = f"bulk {line['id']}"
        if result.get("status") != 200 or result.get("model") != "minilm":
            problems.append(f"{where}: {str(result)[:300]}")
            continue
        if result.get("usage", {}).get("input_tokens") != line["input_tokens"]:
            problems.append(f"{where}: input_tokens {result.get('usage')} vs reference {line['input_tokens']}")
        for key, expected in line["answers"].items():
            compare_answer(f"{where}/{key}", expected, result["answers"][key], problems)
    after = s1harness.request(server, "GET", "/metrics").body.decode()
    sample = 's1serve_batch_requests_{}{{model="minilm"}}'
    requests = metric(after, sample.format("sum")) - metric(before, sample.format("sum"))
    batches = metric(after, sample.format("count")) - metric(before, sample.format("count"))
    if requests != len(answerable) or not batches < requests / 2:
        problems.append(f"bulk: {requests} requests in {batches} batches; expected {len(answerable)} requests "
                        "in batches of more than two on average")


def check_served_by(server, problems):
    """/v1/models names the weights served: the SHA-256 prefix scripts/fetch-default-model verified."""
    with open(os.path.join(ROOT, "scripts", "default-model.sha256"), encoding="utf-8") as f:
        digest = next(line.split()[0] for line in f if line.rstrip().endswith(" model.safetensors"))
    served_by = None
    for _ in range(100):  # the hash runs in the background after start-up
        served_by = s1harness.request(server, "GET", "/v1/models").json()["models"][0].get("served_by")
        if served_by and served_by.get("checkpoint"):
            break
        time.sleep(0.1)
    expected = {"s1serve": served_by and served_by.get("s1serve"), "checkpoint": digest[:12], "dtype": "f32",
                "device": "cpu"}
    if served_by != expected or not served_by.get("s1serve"):
        problems.append(f"served_by: {served_by!r}, expected {expected!r}")


def run(binary: str) -> int:
    if not os.path.exists(os.path.join(model_dir(), "model.safetensors")):
        print(f"FAIL: all-MiniLM-L6-v2 is not installed in {model_dir()}: run scripts/fetch-default-model", file=sys.stderr)
        return 1
    with open(os.path.join(ROOT, "tests", "parity", "minilm", "decisions.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    problems: list[str] = []

    config = os.path.join(tempfile.mkdtemp(prefix="s1-minilm-e2e-"), "batched.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump({"models": [{"source": "minilm", "batch": {"max_requests": 16}}]}, f)
    with s1harness.Server(binary, ["--config", config, "--port", "0"], name="minilm") as server:
        bodies = [dict(line["request"], model="minilm") for line in lines]
        for line, body in zip(lines, bodies):
            response = s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=60.0)
            check_answered(line, body, response, problems)
        # All at once: the executor, busy with the first, gathers the others into batches.
        for line, body, (response, _) in zip(lines, bodies, s1harness.concurrent_requests(server, bodies, stagger=0.0,
                                                                                          timeout=120.0)):
            if isinstance(response, Exception):
                problems.append(f"{line['id']} (concurrent): {response!r}")
            else:
                check_answered(line, body, response, problems)
        metrics = s1harness.request(server, "GET", "/metrics").body.decode()
        batched = metric(metrics, 's1serve_batch_requests_sum{model="minilm"}')
        batches = metric(metrics, 's1serve_batch_requests_count{model="minilm"}')
        served = 2 * sum(1 for body in bodies if not empty_noul_keys(body))
        if batched != served or batches is None or not batches < batched:
            problems.append(f"/metrics: {batched} requests in {batches} batches; expected {served} "
                            "requests, some batched together")
        check_bulk(server, lines, bodies, problems)
        # The alias resolves to the same model.
        body = dict(lines[0]["request"], model="all-minilm-l6-v2")
        response = s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=60.0)
        if response.status != 200 or response.json().get("model") != "minilm":
            problems.append(f"alias all-minilm-l6-v2: {response.status} {response.body[:200]!r}")

    with s1harness.Server(binary, ["--port", "0"], name="minilm-default") as server:
        body = dict(lines[0]["request"])  # no "model": the default model answers
        response = s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=60.0)
        if response.status != 200:
            problems.append(f"default model: status {response.status}: {response.body[:300]!r}")
        else:
            got = response.json()
            if got.get("model") != "minilm":
                problems.append(f"default model: answered by {got.get('model')!r}, expected 'minilm'")
            for key, expected in lines[0]["answers"].items():
                compare_answer(f"default/{key}", expected, got["answers"][key], problems)
        check_served_by(server, problems)

    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    print(f"minilm e2e: {len(lines)} reference requests, {len(problems)} problem(s)")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    s1harness.install_signal_handlers()
    try:
        return run(os.path.abspath(args.binary))
    finally:
        s1harness.Server.stop_all()


if __name__ == "__main__":
    sys.exit(main())
