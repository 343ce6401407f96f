#!/usr/bin/env python3
"""End to end: `s1serve serve --model FILE.gguf` serves a GGUF chat checkpoint with the label-token contract.

tests/fixtures/gguf/tiny-qwen3.gguf is tests/fixtures/tiny-qwen3-chat under llama.cpp's names and keys
(tools/reference/make_gguf_fixtures.py): same weights, its tokenizer in tokenizer.ggml.*, its chat
template in tokenizer.chat_template. Served side by side (the GGUF with a decision file asking for fp32,
as the directory's does), every request of tests/e2e/decoder_requests.jsonl must get identical answers
and input_tokens from both. tiny-qwen35.gguf (tests/fixtures/tiny-qwen3_5-chat with the converter's keys
and value changes, so equal only within fp32 tolerance) must match the Transformers reference answers
of decoder_expected_qwen3_5.jsonl as its directory does in decoder_e2e.py. The Qwen3 GGUF is then
served from a config file entry under the name it gives, and without a decision file under its file
name.

    python3 tests/e2e/gguf_e2e.py --binary build/s1serve
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
from minilm_e2e import compare_answer  # noqa: E402


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def post(server, body):
    return s1harness.request(server, "POST", "/v1/systemone", json_body=body, timeout=60.0)


def answer_of(server, request, model, where, problems):
    body = dict(request, model=model)
    response = post(server, body)
    if response.status != 200:
        problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
        return None
    shape = []
    s1harness.check_systemone_200(body, response, shape)
    problems += [f"{where}: {p}" for p in shape]
    got = response.json()
    return got["answers"], got["usage"]["input_tokens"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    problems = []
    model_dir = os.path.join(ROOT, "tests", "fixtures", "tiny-qwen3-chat")
    directory_name = json.load(open(os.path.join(model_dir, "s1serve.json")))["name"]
    requests = read_jsonl(os.path.join(HERE, "decoder_requests.jsonl"))
    work = tempfile.mkdtemp(prefix="s1-gguf-e2e-")
    try:
        gguf = os.path.join(work, "tiny-qwen3-gguf.gguf")
        shutil.copyfile(os.path.join(ROOT, "tests", "fixtures", "gguf", "tiny-qwen3.gguf"), gguf)
        with open(os.path.join(work, "tiny-qwen3-gguf.s1serve.json"), "w") as f:
            json.dump({"contract": "label-token", "name": "tiny-qwen3-gguf", "precision": "fp32"}, f)
        hybrid = os.path.join(work, "tiny-qwen35.gguf")
        shutil.copyfile(os.path.join(ROOT, "tests", "fixtures", "gguf", "tiny-qwen35.gguf"), hybrid)
        with open(os.path.join(work, "tiny-qwen35.s1serve.json"), "w") as f:
            json.dump({"contract": "label-token", "precision": "fp32"}, f)
        hybrid_expected = read_jsonl(os.path.join(HERE, "decoder_expected_qwen3_5.jsonl"))

        with s1harness.Server(args.binary, ["--model", model_dir, "--model", gguf, "--model", hybrid,
                                            "--port", "0"], name="gguf") as server:
            for number, request in enumerate(requests):
                where = f"request {number}"
                from_directory = answer_of(server, request, directory_name, f"{where} (directory)", problems)
                from_gguf = answer_of(server, request, "tiny-qwen3-gguf", f"{where} (gguf)", problems)
                if from_directory and from_gguf and from_directory != from_gguf:
                    problems.append(f"{where}: gguf {from_gguf} vs directory {from_directory}")
                got = answer_of(server, request, "tiny-qwen35", f"{where} (qwen35 gguf)", problems)
                if got:
                    reference = hybrid_expected[number]
                    if got[1] != reference["input_tokens"]:
                        problems.append(f"{where} (qwen35 gguf): input_tokens {got[1]} vs {reference['input_tokens']}")
                    for key, answer in reference["answers"].items():
                        compare_answer(f"{where} (qwen35 gguf)/{key}", answer, got[0][key], problems)

        os.remove(os.path.join(work, "tiny-qwen3-gguf.s1serve.json"))
        config = os.path.join(work, "config.json")
        with open(config, "w") as f:
            json.dump({"models": [{"source": gguf, "name": "from-config"}, {"source": gguf}]}, f)
        with s1harness.Server(args.binary, ["--config", config, "--port", "0"], name="gguf-config") as server:
            models = s1harness.request(server, "GET", "/v1/models", timeout=10.0).json()
            ids = sorted(m["id"] for m in models["data"])
            if ids != ["from-config", "tiny-qwen3-gguf"]:
                problems.append(f"config: /v1/models lists {ids}, expected from-config and tiny-qwen3-gguf")
            for model in ("from-config", "tiny-qwen3-gguf"):
                answer_of(server, requests[0], model, f"config {model}", problems)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for problem in problems:
        print("FAIL:", problem)
    print(f"gguf e2e: {len(requests)} requests, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
