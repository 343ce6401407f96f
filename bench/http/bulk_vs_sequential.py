#!/usr/bin/env python3
"""/v1/systemone/batch against the same requests sent one after another (docs/benchmarks/batching.md).

64 states (the first 64 e-mails of bench/workloads/multi_question.jsonl) x the 3 questions of
bench/minilm_bench.cpp, against a running server's default model: alternating rounds of 64 sequential
keep-alive POSTs and one bulk POST; prints each round's seconds and the medians' ratio.

    bench/http/bulk_vs_sequential.py --port 18935 [--rounds 5]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def requests(count):
    body = re.search(r'R"\((\{"state".*?)\)"', open(os.path.join(ROOT, "bench", "minilm_bench.cpp")).read(), re.S)
    questions = json.loads(body.group(1))["questions"]
    with open(os.path.join(ROOT, "bench", "workloads", "multi_question.jsonl"), encoding="utf-8") as f:
        states = [json.loads(line)["request"]["state"] for line in f if line.strip()][:count]
    return [{"state": state, "questions": questions} for state in states]


def post(connection, path, body):
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status} {data[:200]!r}")
    return json.loads(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--states", type=int, default=64)
    args = parser.parse_args()
    items = requests(args.states)
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=300)
    post(connection, "/v1/systemone/batch", {"requests": items})  # warm-up
    sequential, bulk = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for item in items:
            post(connection, "/v1/systemone", item)
        sequential.append(time.perf_counter() - started)
        started = time.perf_counter()
        results = post(connection, "/v1/systemone/batch", {"requests": items})["results"]
        bulk.append(time.perf_counter() - started)
        assert all(result["status"] == 200 for result in results)
    print("sequential s:", " ".join(f"{s:.3f}" for s in sequential))
    print("bulk s:      ", " ".join(f"{s:.3f}" for s in bulk))
    print(f"median sequential {statistics.median(sequential):.3f} s, bulk {statistics.median(bulk):.3f} s, "
          f"bulk speed-up {statistics.median(sequential) / statistics.median(bulk):.2f}x")


if __name__ == "__main__":
    main()
