#!/usr/bin/env python3
"""End to end: the real s1serve binary serves tiny chat decoders with the label-token contract.

For each family (Qwen3 dense, Qwen3.5 hybrid), tests/fixtures/tiny-<family>-chat (a random checkpoint,
the tiny Qwen-style tokenizer and its chat template, s1serve.json asking for fp32):

1. every request of tests/e2e/decoder_requests.jsonl goes to POST /v1/systemone; each response must
   pass the §8.4 shape checks, carry the Transformers reference's input_tokens exactly (the shared
   prefix counted once) and its answers within 1e-4 (tools/reference/make_tiny_chat_models.py);
2. a multi-question request costs fewer input tokens than its questions asked one by one;
3. more options than there are single-token labels: 400 too_many_options;
4. the same checkpoint without s1serve.json is served under its directory name (the generic path);
5. `s1serve logits --chat --top 5` prints the reference's token ids and top logits, and
   `--tokens … --positions all --out F.npy` writes them all.

    python3 tests/e2e/decoder_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
sys.path.insert(0, HERE)

import s1harness  # noqa: E402
from minilm_e2e import compare_answer  # noqa: E402

FAMILIES = ("qwen3", "qwen3_5")
LOGIT_TOLERANCE = 1e-4


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def post(server, body):
    return s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=60.0)


def check_prefix_cache(family, server, name, multi, first, repeated, problems):
    """The repeated request's state prefix came from the prefix cache: counted, answers unchanged;
    two of its questions with the same state reuse it too and answer as they did among five."""
    cached = repeated["usage"].get("cached_tokens", 0)
    if not 0 < cached < repeated["usage"]["input_tokens"]:
        problems.append(f"{family}: repeated request's usage {repeated['usage']}, expected cached_tokens")
    if repeated["answers"] != first["answers"]:
        problems.append(f"{family}: answers changed with the cached prefix: {repeated['answers']} vs {first['answers']}")
    keys = list(multi["questions"])[:2]
    fewer = post(server, dict(multi, model=name, questions={k: multi["questions"][k] for k in keys})).json()
    if not fewer["usage"].get("cached_tokens", 0) > 0:
        problems.append(f"{family}: same state, other questions: usage {fewer['usage']}, expected cached_tokens")
    for key in keys:
        compare_answer(f"{family} cached prefix/{key}", first["answers"][key], fewer["answers"][key], problems)
    metrics = s1harness.request(server, "GET", "/metrics").body.decode()
    hits = [line for line in metrics.splitlines() if line.startswith(f's1serve_prefix_cache_hits_total{{model="{name}"}}')]
    if not hits or not float(hits[0].split()[-1]) >= 2:
        problems.append(f"{family}: /metrics prefix cache hits {hits}, expected at least 2")


def check_family(binary, family, problems):
    model_dir = os.path.join(ROOT, "tests", "fixtures", f"tiny-{family}-chat")
    name = json.load(open(os.path.join(model_dir, "s1serve.json")))["name"]
    requests = read_jsonl(os.path.join(HERE, "decoder_requests.jsonl"))
    expected_lines = read_jsonl(os.path.join(HERE, f"decoder_expected_{family}.jsonl"))
    expected, logits_expected = expected_lines[: len(requests)], expected_lines[len(requests)]

    with s1harness.Server(binary, ["--model", model_dir, "--port", "0"], name=family) as server:
        for number, (request, reference) in enumerate(zip(requests, expected)):
            where = f"{family} request {number}"
            body = dict(request, model=name)
            response = post(server, body)
            if response.status != 200:
                problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
                continue
            shape = []
            s1harness.check_systemone_200(body, response, shape)
            problems += [f"{where}: {p}" for p in shape]
            got = response.json()
            if got.get("usage", {}).get("input_tokens") != reference["input_tokens"]:
                problems.append(f"{where}: input_tokens {got.get('usage')} vs reference {reference['input_tokens']}")
            for key, answer in reference["answers"].items():
                compare_answer(f"{where}/{key}", answer, got["answers"][key], problems)

        # Prefix sharing: the five questions of the multi-question request asked one at a time cost more.
        multi = next(r for r in requests if len(r["questions"]) >= 5)
        first = post(server, dict(multi, model=name)).json()
        repeated = post(server, dict(multi, model=name)).json()
        together = repeated["usage"]["input_tokens"]
        check_prefix_cache(family, server, name, multi, first, repeated, problems)
        alone = sum(post(server, dict(multi, model=name, questions={k: q}))
                    .json()["usage"]["input_tokens"] for k, q in multi["questions"].items())
        if not together < alone:
            problems.append(f"{family}: 5 questions together cost {together} tokens, one by one {alone}")

        options = {f"option {i}": None for i in range(80)}
        response = post(server, {"model": name, "state": "x", "questions": {"q": {"type": "choice", "criteria": options}}})
        if response.status != 400 or response.json().get("detail", {}).get("error_type") != "too_many_options":
            problems.append(f"{family}: 80 options gave {response.status} {response.body[:200]!r}")

    # The generic path: a chat checkpoint without a decision file, named after its directory.
    with tempfile.TemporaryDirectory() as temp:
        plain = os.path.join(temp, f"plain-{family}")
        shutil.copytree(model_dir, plain, ignore=shutil.ignore_patterns("s1serve.json"))
        with s1harness.Server(binary, ["--model", plain, "--port", "0"], name=f"plain-{family}") as server:
            body = dict(requests[0], model=f"plain-{family}")
            response = post(server, body)
            shape = []
            if response.status == 200:
                s1harness.check_systemone_200(body, response, shape)
            else:
                shape.append(f"status {response.status}: {response.body[:300]!r}")
            problems += [f"{family} without s1serve.json: {p}" for p in shape]

    output = subprocess.run([binary, "logits", "--model", model_dir, "--text", logits_expected["logits_text"], "--chat",
                             "--top", "5"], capture_output=True, text=True, timeout=120)
    if output.returncode != 0:
        problems.append(f"{family} logits: exit {output.returncode}: {output.stderr[:300]}")
        return
    lines = [json.loads(line) for line in output.stdout.splitlines()]
    if lines[0]["token_ids"] != logits_expected["token_ids"]:
        problems.append(f"{family} logits: token ids {lines[0]['token_ids']} vs {logits_expected['token_ids']}")
    top, reference_top = lines[1]["top"], logits_expected["top"]
    scale = max(abs(v) for _, v in reference_top)
    for (got_id, got_value), (want_id, want_value) in zip(top, reference_top):
        if abs(got_value - want_value) > LOGIT_TOLERANCE * max(1.0, scale):
            problems.append(f"{family} logits: {got_id}:{got_value} vs reference {want_id}:{want_value}")
    if [i for i, _ in top[:1]] != [i for i, _ in reference_top[:1]]:
        problems.append(f"{family} logits: top token {top[0]} vs reference {reference_top[0]}")

    # The same ids given directly, every position, all logits to .npy: the last row holds the same top logit.
    with tempfile.TemporaryDirectory() as temp:
        out = os.path.join(temp, "logits.npy")
        ids = logits_expected["token_ids"]
        output = subprocess.run([binary, "logits", "--model", model_dir, "--tokens", ",".join(map(str, ids)),
                                 "--positions", "all", "--top", "1", "--out", out],
                                capture_output=True, text=True, timeout=120)
        if output.returncode != 0:
            problems.append(f"{family} logits --out: exit {output.returncode}: {output.stderr[:300]}")
            return
        with open(out, "rb") as f:
            data = f.read()
        header_length = int.from_bytes(data[8:10], "little")
        header = data[10:10 + header_length].decode("latin-1")
        vocab = json.load(open(os.path.join(model_dir, "config.json")))["vocab_size"]
        if data[:6] != b"\x93NUMPY" or f"'shape': ({len(ids)}, {vocab})" not in header:
            problems.append(f"{family} logits --out: header {header!r}")
            return
        values = struct.unpack(f"<{len(ids) * vocab}f", data[10 + header_length:])
        last = values[(len(ids) - 1) * vocab:]
        want_id, want_value = reference_top[0]
        if abs(last[want_id] - want_value) > LOGIT_TOLERANCE * max(1.0, scale) or max(last) != last[want_id]:
            problems.append(f"{family} logits --out: last row [{want_id}] = {last[want_id]}, reference {want_value}")
        positions = [json.loads(line)["position"] for line in output.stdout.splitlines()[1:]]
        if positions != list(range(len(ids))):
            problems.append(f"{family} logits --positions all: positions {positions}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    s1harness.install_signal_handlers()
    problems: list[str] = []
    try:
        for family in FAMILIES:
            check_family(os.path.abspath(args.binary), family, problems)
    finally:
        s1harness.Server.stop_all()
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    print(f"decoder e2e: {len(FAMILIES)} families, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
