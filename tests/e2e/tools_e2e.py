#!/usr/bin/env python3
"""End-to-end tests of `s1serve compare` and `s1serve bench` (Python standard library only).

Usage: tools_e2e.py --binary path/to/s1serve [--source-dir REPO] [--keep-logs]

Starts real s1serve processes on free loopback ports with test backends, runs the tools against
them and checks exit status, output and the --out JSON. Prints one line per test and
`N passed, M failed`; exits non-zero on any failure and always stops the servers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

BINARY = ""
SOURCE_DIR = ""
SERVERS: list["Server"] = []


class Server:
    def __init__(self, name: str, args: list[str], env: dict | None = None):
        self.name = name
        self.args = args
        self.env = env
        self.log: list[str] = []
        self.url = ""
        self.process: subprocess.Popen | None = None

    def start(self) -> "Server":
        env = dict(os.environ)
        env.pop("S1SERVE_API_KEYS", None)
        env.update(self.env or {})
        self.process = subprocess.Popen([BINARY, "serve", "--port", "0", *self.args], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=env)
        found = threading.Event()

        def pump():
            for line in self.process.stderr:
                self.log.append(line)
                match = re.search(r"listening on (http://\S+)", line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(30):
            raise RuntimeError(f"{self.name} did not start:\n" + "".join(self.log))
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except Exception:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} never became healthy:\n" + "".join(self.log))

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(name: str, *args: str, env: dict | None = None) -> Server:
    server = Server(name, list(args), env)
    SERVERS.append(server)
    return server.start()


def tool(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, env=full_env)


def expect(condition: bool, message: str, result: subprocess.CompletedProcess | None = None):
    if not condition:
        detail = ""
        if result is not None:
            detail = f"\n--- rc {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        raise AssertionError(message + detail)


def workload(name: str) -> str:
    return os.path.join(SOURCE_DIR, "bench", "workloads", name)


# --- tests -------------------------------------------------------------------------------------

def test_compare_identical(ctx):
    result = tool("compare", "--direct", ctx["a"].url, "--via", ctx["b"].url)
    expect(result.returncode == 0, "compare of two mock:ramp servers must exit 0", result)
    cases = [line for line in result.stdout.splitlines() if line.startswith("  ") and "/" in line]
    expect(len(cases) >= 9, "compare must report at least 9 requests", result)
    expect("DIFFERENT" not in result.stdout, "no request may differ", result)
    expect(re.search(r"invalid request \(422\)\s+422 / 422\s+identical", result.stdout) is not None,
           "the invalid request must get 422 on both sides", result)
    expect(re.search(r"^(\d+) of \1 identical$", result.stdout, re.M) is not None, "summary line", result)

    named = tool("compare", "--direct", ctx["a"].url, "--via", ctx["b"].url + "/", "--model", "mock-ramp")
    expect(named.returncode == 0, "compare with --model must exit 0", named)


def test_compare_detects_difference(ctx):
    # Server U serves the uniform backend under the same name, so requests resolve on both sides
    # but the answers differ.
    result = tool("compare", "--direct", ctx["a"].url, "--via", ctx["u"].url)
    expect(result.returncode == 1, "compare must exit 1 when answers differ", result)
    expect("DIFFERENT" in result.stdout, "a difference must be reported", result)
    expect("bodies differ from byte" in result.stdout, "the byte offset must be shown", result)
    expect(re.search(r"/answers/\S+/noul: direct 0\.7310585786300049, via 0\.5", result.stdout) is not None,
           "a JSON member diff must name the differing answer", result)
    expect(re.search(r"invalid request \(422\)\s+422 / 422\s+identical", result.stdout) is not None,
           "validation errors are the same on both", result)


def test_compare_token(ctx):
    secret = "e2e-secret-key-4711"
    env = {"S1SERVE_API_KEYS": secret}
    a = start("keyed-a", "--model", "mock:ramp", "--default-model", "mock-ramp", env=env)
    b = start("keyed-b", "--model", "mock:ramp", "--default-model", "mock-ramp", env=env)
    result = tool("compare", "--direct", a.url, "--via", b.url, "--token-env", "E2E_TOOLS_TOKEN",
                  env={"E2E_TOOLS_TOKEN": secret})
    expect(result.returncode == 0, "compare with the key must exit 0", result)
    expect(secret not in result.stdout + result.stderr, "the key must never be printed", result)
    missing = tool("compare", "--direct", a.url, "--via", b.url)
    expect(missing.returncode == 1 and "401 / 401" in missing.stdout, "without the key both sides answer 401",
           missing)
    unset = tool("compare", "--direct", a.url, "--via", b.url, "--token-env", "E2E_TOOLS_UNSET_VARIABLE")
    expect(unset.returncode == 2, "an unset --token-env variable is a usage error", unset)


def test_compare_through_router(ctx):
    # A real s1serve router in front of worker A: answers must be byte-identical.
    router = start("router", "--upstream", "remote=" + ctx["a"].url, "--default-model", "remote")
    result = tool("compare", "--direct", ctx["a"].url, "--via", router.url)
    expect(result.returncode == 0, "compare through the s1serve router must exit 0", result)
    expect("DIFFERENT" not in result.stdout, "no request may differ through the router", result)


def test_compare_unreachable(ctx):
    result = tool("compare", "--direct", ctx["a"].url, "--via", "http://127.0.0.1:9")
    expect(result.returncode == 1, "an unreachable side must fail", result)
    expect("via: connect error" in result.stdout, "the connection error is reported", result)


def check_summary(summary: dict):
    latency = summary["latency_ms"]
    expect(summary["percentile_method"] == "nearest-rank", "percentile method is stated")
    expect(latency["count"] == summary["requests"], "every measured request has a latency")
    expect(0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"] < 10_000,
           f"latency percentiles are ordered and sane: {latency}")
    expect(summary["requests_per_second"] > 0, "throughput is positive")


def test_bench_duration(ctx):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        result = tool("bench", "--url", ctx["a"].url, "--workload", workload("public231_synthetic.jsonl"),
                      "--concurrency", "4", "--duration", "2", "--warmup", "20", "--out", out)
        expect(result.returncode == 0, "bench must exit 0", result)
        for text in ["nearest-rank", "requests/s", "choice accuracy", "noul accuracy", "p >= 0.5"]:
            expect(text in result.stdout, f"bench output must mention '{text}'", result)
        with open(out, encoding="utf-8") as f:
            summary = json.load(f)
    check_summary(summary)
    expect(summary["errors"] == 0 and summary["ok"] == summary["requests"], f"no errors: {summary}")
    expect(summary["statuses"] == {"200": summary["requests"]}, f"all 200: {summary['statuses']}")
    expect(summary["requests"] >= 20, f"a few seconds at concurrency 4 send many requests: {summary['requests']}")
    expect(1.5 <= summary["elapsed_s"] < 10, f"duration honoured: {summary['elapsed_s']}")
    quality = summary["quality"]
    expect(quality["choice"]["total"] + quality["noul"]["total"] == summary["requests"],
           f"one graded question per request: {quality}")
    # mock:ramp answers noul with p = 0.73 (yes), so noul accuracy is the share of "true" labels.
    expect(0 < quality["noul"]["accuracy"] < 1, f"noul accuracy is a real share: {quality}")


def test_bench_requests_multi(ctx):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        result = tool("bench", "--url", ctx["a"].url, "--workload", workload("multi_question.jsonl"),
                      "--concurrency", "2", "--requests", "60", "--model", "mock-ramp", "--out", out)
        expect(result.returncode == 0, "bench must exit 0", result)
        expect("score MAE" in result.stdout, "score MAE is printed", result)
        with open(out, encoding="utf-8") as f:
            summary = json.load(f)
    check_summary(summary)
    expect(summary["requests"] == 60 and summary["errors"] == 0, f"exactly 60 requests, no errors: {summary}")
    score = summary["quality"]["score"]
    expect(score["answered"] == score["total"] > 0 and 0 <= score["mae"] <= 9, f"score MAE is sane: {score}")


def test_bench_counts_failures(ctx):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        result = tool("bench", "--url", "http://127.0.0.1:9", "--workload", workload("public231_synthetic.jsonl"),
                      "--requests", "5", "--out", out)
        expect(result.returncode == 0, "bench reports failures, it does not crash", result)
        with open(out, encoding="utf-8") as f:
            summary = json.load(f)
    expect(summary["requests"] == 5 and summary["errors"] == 5 and summary["connection_errors"] == {"connect": 5},
           f"connection errors are counted: {summary}")
    quality = summary["quality"]
    expect(quality["choice"]["total"] + quality["noul"]["total"] == 5, "failed requests stay in the denominators")
    expect(quality["choice"]["unanswered"] + quality["noul"]["unanswered"] == 5, "and count as unanswered")

    # Without a default model (two served, neither named default) every request is a 422: counted by status.
    nodefault = start("no-default", "--model", "mock:ramp", "--model", "mock:uniform")
    result = tool("bench", "--url", nodefault.url, "--workload", workload("public231_synthetic.jsonl"),
                  "--requests", "7", "--concurrency", "2")
    expect(result.returncode == 0 and "422: 7" in result.stdout and "errors       7 of 7" in result.stdout,
           "non-200 responses are counted by status", result)


def main() -> int:
    global BINARY, SOURCE_DIR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    SOURCE_DIR = os.path.abspath(args.source_dir)

    tests = [test_compare_identical, test_compare_detects_difference, test_compare_token, test_compare_through_router,
             test_compare_unreachable,
             test_bench_duration, test_bench_requests_multi, test_bench_counts_failures]
    passed = failed = 0
    config_dir = tempfile.TemporaryDirectory()
    try:
        config = os.path.join(config_dir.name, "uniform-as-ramp.json")
        with open(config, "w", encoding="utf-8") as f:
            json.dump({"default_model": "mock-ramp", "models": [{"source": "mock:uniform", "name": "mock-ramp"}]}, f)
        ctx = {
            "a": start("ramp-a", "--model", "mock:ramp", "--default-model", "mock-ramp"),
            "b": start("ramp-b", "--model", "mock:ramp", "--default-model", "mock-ramp"),
            "u": start("uniform-as-ramp", "--config", config),
        }
        for test in tests:
            started = time.time()
            try:
                test(ctx)
                passed += 1
                print(f"PASS {test.__name__} ({time.time() - started:.1f} s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {test.__name__}\n{traceback.format_exc()}", flush=True)
    finally:
        for server in SERVERS:
            server.stop()
        if failed or args.keep_logs:
            for server in SERVERS:
                print(f"--- log of {server.name}\n" + "".join(server.log[-40:]))
        config_dir.cleanup()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
