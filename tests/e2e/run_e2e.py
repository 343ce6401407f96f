#!/usr/bin/env python3
"""End-to-end robustness tests of s1serve: the real binary over HTTP (Python standard library only).

Usage: run_e2e.py --binary path/to/s1serve [--filter REGEX] [--serial] [--keep-logs]

Each test starts its own server(s) on a free port; tests run concurrently (the slow backend sleeps,
it does not compute) so the whole run takes well under a minute. Prints one line per test and a
final line `N passed, M failed`; exits non-zero on any failure and always stops the servers.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(os.path.dirname(HERE), "conformance")
sys.path.insert(0, CONFORMANCE)

import s1harness as h  # noqa: E402

BINARY = None
KEEP_LOGS = False
STATE = "Ticket: I was charged twice."
NOUL = {"type": "noul", "instructions": "Refund?"}


def body_for(model):
    return {"model": model, "state": STATE, "questions": {"q": NOUL}}


class Failures(Exception):
    pass


class Checker:
    def __init__(self):
        self.problems = []

    def __call__(self, condition, message):
        if not condition:
            self.problems.append(message)
        return condition

    def extend(self, problems, prefix=""):
        self.problems.extend(prefix + p for p in problems)


SERVERS_LOCK = threading.Lock()
LOGS = []


def start_server(name, *args, env=None, cwd=None):
    server = h.Server(BINARY, list(args), cwd=cwd, env=env, name=name)
    with SERVERS_LOCK:
        LOGS.append(server)
    return server.start()


def post(server, model_or_body, timeout=30.0, headers=None, connection=None, path="/v1/systemone"):
    body = body_for(model_or_body) if isinstance(model_or_body, str) else model_or_body
    return h.request(server, "POST", path, headers=dict(headers or {}), json_body=body, timeout=timeout,
                     connection=connection)


def posts_in_flight(server, model, count, stagger):
    """Starts `count` posts of body_for(model), each from its own thread, `stagger` seconds apart:
    (threads, results), a result being (response or exception, seconds) once its thread ends."""
    results = [None] * count

    def worker(index):
        start = time.monotonic()
        try:
            results[index] = (post(server, model, timeout=20), time.monotonic() - start)
        except Exception as error:  # noqa: BLE001 - the caller reports it
            results[index] = (error, time.monotonic() - start)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
        time.sleep(stagger)
    return threads, results


def exit_code(server, seconds=15):
    """The server's exit status within `seconds`, or None."""
    try:
        return server.wait(seconds)
    except subprocess.TimeoutExpired:
        return None


def metric_value(text, name, labels):
    """The value of one sample of the Prometheus text; labels is a dict that must match exactly."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(3) or ""))
        if found == labels:
            return float(match.group(4))
    return None


# --------------------------------------------------------------------------------------------------
# Tests


def test_overload():
    """A burst of 20 against mock-slow with queue 1 and --overload-status 529: exactly 2 admitted (the
    one running and the one waiting), the rest 529 overloaded with Retry-After the seconds left of the
    3 s run, nothing crashes, and the server answers normally afterwards."""
    check = Checker()
    server = start_server("overload", "--model", "mock:slow", "--model", "mock:ramp", "--queue", "1",
                          "--overload-status", "529", "--port", "0")
    try:
        results = h.concurrent_requests(server, [body_for("mock-slow")] * 20, stagger=0.01, timeout=20)
        statuses = []
        for response, seconds in results:
            if isinstance(response, Exception):
                check(False, f"request failed: {type(response).__name__}: {response}")
                continue
            statuses.append(response.status)
            if response.status == 529:
                problems = []
                h.check_error_envelope(response, 529, "overloaded", problems)
                check.extend(problems, "529: ")
                check(response.header("Retry-After") in ("2", "3"), f"529 Retry-After {response.header('Retry-After')!r}")
                check(seconds < 1.5, f"529 took {seconds:.2f}s, expected at once")
            elif response.status == 200:
                problems = []
                h.check_systemone_200(body_for("mock-slow"), response, problems)
                check.extend(problems, "200: ")
        ok, overloaded = statuses.count(200), statuses.count(529)
        check(ok == 2 and ok + overloaded == len(statuses),
              f"statuses {sorted(statuses)}: expected 2 x 200 (queue 1 plus the one running) and 529 for the rest")
        check(server.proc.poll() is None, "the server died")
        health = h.request(server, "GET", "/health")
        check(health.status == 200, f"/health after the burst: {health.status}")
        fast = post(server, "mock-ramp")
        check(fast.status == 200, f"mock-ramp after the burst: {fast.status} {fast.body[:200]!r}")
        slow = post(server, "mock-slow", timeout=10)
        check(slow.status == 200, f"mock-slow after the burst: {slow.status} {slow.body[:200]!r}")
        metrics = h.request(server, "GET", "/metrics").body.decode()
        rejected = metric_value(metrics, "s1serve_rejected_total", {"reason": "overloaded"})
        check(rejected == overloaded, f"s1serve_rejected_total{{reason=overloaded}} = {rejected}, expected {overloaded}")
    finally:
        code = server.stop()
    check(code == 0, f"exit code {code} after SIGTERM")
    return check.problems


def test_deadline():
    """mock-slow (3 s) with --timeout-ms 1000: 504 deadline_exceeded at about 1 s, not 3 s."""
    check = Checker()
    with start_server("deadline", "--model", "mock:slow", "--timeout-ms", "1000", "--port", "0") as server:
        start = time.monotonic()
        response = post(server, "mock-slow", timeout=10)
        seconds = time.monotonic() - start
        problems = []
        h.check_error_envelope(response, 504, "deadline_exceeded", problems)
        check.extend(problems)
        check(0.8 <= seconds <= 1.8, f"504 after {seconds:.2f}s, expected ~1 s")
        h.check_common_headers(response, check.problems)
    return check.problems


def test_i57():
    """I57 on config C: one 200 (~3 s), one 504 (~5 s), one 503 with Retry-After (at once)."""
    with start_server("i57", "--config", "config-c.json", cwd=os.path.join(CONFORMANCE, "configs")) as server:
        return h.scenario_i57(server)


def test_i58():
    """I58 on config C: Content-Length 100, 50 bytes, stall: 504 after ~5 s."""
    with start_server("i58", "--config", "config-c.json", cwd=os.path.join(CONFORMANCE, "configs")) as server:
        return h.scenario_i58(server)


def test_oversize():
    """--max-body 1000: 413 for a plain body of 1001 bytes (before it is read), for a chunked body as
    soon as it crosses the limit, a body of exactly 1000 bytes is served, and the connection closes."""
    check = Checker()
    with start_server("oversize", "--model", "mock:ramp", "--max-body", "1000", "--port", "0") as server:
        base = ('{"model":"mock-ramp","state":"' + STATE + '","questions":{"q":{"type":"noul","instructions":"?"}}}').encode()
        exact = base + b" " * (1000 - len(base))
        response = h.request(server, "POST", "/v1/systemone", headers={"Content-Type": "application/json"}, body=exact)
        check(response.status == 200, f"1000-byte body: {response.status} {response.body[:200]!r}")

        def expect_413_and_close(conn, label, missing):
            try:
                response = conn.read_response("POST", timeout=3)
                problems = []
                h.check_error_envelope(response, 413, "payload_too_large", problems)
                check.extend(problems, f"{label}: ")
                check(conn.at_eof(2.0), f"{label}: the connection stayed open after 413")
            except (socket.timeout, h.ProtocolError, OSError) as error:
                check(False, f"{label}: no 413 {missing} ({type(error).__name__}: {error})")

        # Plain: the head alone announces 1001 bytes; the answer must come before the body is sent.
        with h.Connection(server, timeout=5) as conn:
            conn.send_all(h.build_request("POST", "/v1/systemone", [("Content-Type", "application/json")], None,
                                          content_length=1001))
            expect_413_and_close(conn, "plain", "before the body was sent")

        # Chunked: two chunks of 600 bytes and no terminating chunk; 413 must come anyway, whether the first
        # chunk arrives with the head (parsed from the header's read) or after it.
        for first_with_head in (True, False):
            with h.Connection(server, timeout=5) as conn:
                head = h.build_request("POST", "/v1/systemone", [("Content-Type", "application/json")], None,
                                       chunked=True)
                first = b"258\r\n" + b"a" * 600 + b"\r\n"
                if first_with_head:
                    conn.send_all(head + first)
                else:
                    conn.send_all(head)
                    time.sleep(0.1)
                    conn.send_all(first)
                time.sleep(0.1)
                try:
                    conn.send_all(b"258\r\n" + b"a" * 600 + b"\r\n")
                except OSError:
                    pass
                expect_413_and_close(conn, "chunked", "once the body crossed the limit")
        check(h.request(server, "GET", "/health").status == 200, "server unhealthy afterwards")
    return check.problems


def test_auth():
    """Keys from S1SERVE_API_KEYS and from --api-key-file: 401 + WWW-Authenticate: Bearer, scheme
    case-insensitive, /health and /metrics open."""
    check = Checker()
    with start_server("auth-env", "--model", "mock:ramp", "--port", "0", env={"S1SERVE_API_KEYS": "k-one,k-two"}) as server:
        for header, expected in ((None, 401), ("Bearer k-two", 200), ("bearer k-one", 200), ("Bearer k-three", 401),
                                 ("Bearer k-one ", None), ("Basic k-one", 401), ("Bearer", 401)):
            headers = {"Authorization": header} if header is not None else {}
            response = post(server, "mock-ramp", headers=headers)
            if expected is None:
                continue
            if check(response.status == expected, f"Authorization {header!r}: {response.status}, expected {expected}") \
                    and expected == 401:
                problems = []
                h.check_error_envelope(response, 401, "unauthorized", problems)
                check.extend(problems, f"{header!r}: ")
                check(response.header("WWW-Authenticate") == "Bearer",
                      f"{header!r}: WWW-Authenticate {response.header('WWW-Authenticate')!r}")
        check(h.request(server, "GET", "/health").status == 200, "/health needs no key")
        check(h.request(server, "GET", "/metrics").status == 200, "/metrics needs no key")
        check(h.request(server, "GET", "/v1/models").status == 401, "/v1/models without a key is not 401")
        metrics = h.request(server, "GET", "/metrics").body.decode()
        value = metric_value(metrics, "s1serve_rejected_total", {"reason": "unauthorized"})
        check(value is not None and value >= 4, f"s1serve_rejected_total{{reason=unauthorized}} = {value}")
    with tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False) as keys:
        keys.write("k-file\n")
    try:
        with start_server("auth-file", "--model", "mock:ramp", "--port", "0", "--api-key-file", keys.name) as server:
            check(post(server, "mock-ramp", headers={"Authorization": "Bearer k-file"}).status == 200, "key from file refused")
            check(post(server, "mock-ramp", headers={"Authorization": "Bearer k-test"}).status == 401, "wrong key accepted")
    finally:
        os.unlink(keys.name)
    return check.problems


def test_shutdown_while_busy():
    """SIGTERM while 2 mock-slow requests run or wait: both complete with 200, new connections are
    refused after the signal, and the process exits 0."""
    check = Checker()
    server = start_server("shutdown", "--model", "mock:slow", "--queue", "4", "--port", "0")
    try:
        threads, results = posts_in_flight(server, "mock-slow", 2, stagger=0.2)
        time.sleep(0.5)
        signalled = time.monotonic()
        server.signal(signal.SIGTERM)
        time.sleep(0.5)
        try:
            with socket.create_connection((server.host, server.port), timeout=2) as sock:
                # Accepted by the kernel backlog perhaps, but it must not be served.
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                sock.settimeout(2)
                data = sock.recv(100)
                check(data == b"", f"a connection after SIGTERM was served: {data[:60]!r}")
        except (ConnectionRefusedError, ConnectionResetError, socket.timeout):
            pass
        for thread in threads:
            thread.join(20)
        for index, (response, seconds) in enumerate(results):
            if isinstance(response, Exception):
                check(False, f"in-flight request {index}: {type(response).__name__}: {response}")
            else:
                check(response.status == 200, f"in-flight request {index}: {response.status} {response.body[:200]!r}")
        try:
            code = server.wait(15)
        except Exception:  # noqa: BLE001
            code = None
        check(code == 0, f"exit code {code}, expected 0")
        check(time.monotonic() - signalled < 10, "shutdown took too long")
    finally:
        server.stop()
    return check.problems


def test_disconnect_while_queued():
    """Queue 1: a request waiting in the queue whose client disconnects is dropped, so the next
    request is admitted (200, not 503)."""
    check = Checker()
    with start_server("disconnect", "--model", "mock:slow", "--queue", "1", "--port", "0") as server:
        first = [None]

        def run_first():
            first[0] = post(server, "mock-slow", timeout=20)

        thread = threading.Thread(target=run_first, daemon=True)
        thread.start()
        time.sleep(0.3)
        waiting = h.Connection(server, timeout=5)
        head = h.build_request("POST", "/v1/systemone", [("Content-Type", "application/json")],
                               json.dumps(body_for("mock-slow")).encode())
        waiting.send_all(head + json.dumps(body_for("mock-slow")).encode())
        time.sleep(0.3)
        waiting.close()
        time.sleep(0.3)
        start = time.monotonic()
        third = post(server, "mock-slow", timeout=20)
        seconds = time.monotonic() - start
        check(third.status == 200, f"request after the disconnect: {third.status} {third.body[:200]!r} "
                                   "(the disconnected request still holds the queue slot)")
        check(seconds < 5.5, f"the next request took {seconds:.2f}s: the dropped job seems to have run")
        thread.join(20)
        check(first[0] is not None and first[0].status == 200, f"first request: {first[0]!r}")
        metrics = h.request(server, "GET", "/metrics").body.decode()
        depth = metric_value(metrics, "s1serve_queue_depth", {"model": "mock-slow"})
        check(depth == 0, f"s1serve_queue_depth{{model=mock-slow}} = {depth} afterwards")
    return check.problems


def test_keep_alive_head_metrics():
    """Several requests on one connection; HEAD /health has no body; /metrics counters move."""
    check = Checker()
    with start_server("keepalive", "--model", "mock:ramp", "--port", "0") as server:
        metrics = h.request(server, "GET", "/metrics").body.decode()
        before_ok = metric_value(metrics, "s1serve_requests_total", {"route": "/v1/systemone", "status": "200"}) or 0.0
        before_422 = metric_value(metrics, "s1serve_requests_total", {"route": "/v1/systemone", "status": "422"}) or 0.0
        before_tokens = metric_value(metrics, "s1serve_input_tokens_total", {"model": "mock-ramp"}) or 0.0
        tokens = 0
        with h.Connection(server, timeout=10) as conn:
            for index in range(3):
                response = post(server, "mock-ramp", connection=conn)
                check(response.status == 200 and not response.closed, f"keep-alive POST {index}: {response.status}")
                if response.status == 200:
                    tokens += response.json()["usage"]["input_tokens"]
            response = h.request(server, "GET", "/health", connection=conn)
            check(response.status == 200 and not response.closed, f"keep-alive /health: {response.status}")
            response = h.request(server, "POST", "/v1/systemone", headers={"Content-Type": "application/json"},
                                 body=b'{"state":"x"}', connection=conn)
            check(response.status == 422 and not response.closed, f"keep-alive 422: {response.status}")
            response = h.request(server, "HEAD", "/health", connection=conn)
            check(response.status == 200 and not response.closed, f"keep-alive HEAD: {response.status}")
            response = h.request(server, "GET", "/v1/models", connection=conn)
            check(response.status == 200 and response.json().get("object") == "list",
                  f"GET /v1/models after HEAD on the same connection: {response.status} {response.body[:100]!r}")
        # HEAD /health: headers of the GET, and not one body byte even when we read to the end.
        get = h.request(server, "GET", "/health")
        with h.Connection(server, timeout=5) as conn:
            conn.send_all(b"HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = conn.read_response("HEAD")
            check(head.status == 200, f"HEAD /health: {head.status}")
            check(conn.at_eof(2.0), f"HEAD /health sent body bytes: {conn.buffer[:60]!r}")
            check(head.header("Content-Type") == get.header("Content-Type"),
                  f"HEAD Content-Type {head.header('Content-Type')!r} != GET {get.header('Content-Type')!r}")
        metrics = h.request(server, "GET", "/metrics").body.decode()
        after_ok = metric_value(metrics, "s1serve_requests_total", {"route": "/v1/systemone", "status": "200"})
        after_422 = metric_value(metrics, "s1serve_requests_total", {"route": "/v1/systemone", "status": "422"})
        after_tokens = metric_value(metrics, "s1serve_input_tokens_total", {"model": "mock-ramp"})
        check(after_ok == before_ok + 3, f"requests_total 200: {before_ok} -> {after_ok}, expected +3")
        check(after_422 == before_422 + 1, f"requests_total 422: {before_422} -> {after_422}, expected +1")
        check(after_tokens == before_tokens + tokens, f"input_tokens_total {before_tokens} -> {after_tokens}, expected +{tokens}")
        questions = metric_value(metrics, "s1serve_questions_total", {"model": "mock-ramp", "type": "noul"})
        check(questions is not None and questions >= 3, f"s1serve_questions_total{{noul}} = {questions}")
        for family in ("s1serve_requests_total", "s1serve_rejected_total", "s1serve_input_tokens_total",
                       "s1serve_questions_total", "s1serve_request_duration_seconds", "s1serve_queue_wait_seconds",
                       "s1serve_inference_seconds", "s1serve_queue_depth", "s1serve_queue_capacity",
                       "s1serve_model_ready"):
            check(re.search(rf"^# TYPE {family} ", metrics, re.M) is not None, f"/metrics lacks the family {family}")
        capacity = metric_value(metrics, "s1serve_queue_capacity", {"model": "mock-ramp"})
        check(capacity == 32, f"s1serve_queue_capacity{{mock-ramp}} = {capacity}, expected the default 32")
        check(metric_value(metrics, "s1serve_model_ready", {"model": "mock-ramp"}) == 1, "s1serve_model_ready != 1")
        count = metric_value(metrics, "s1serve_request_duration_seconds_count", {"route": "/v1/systemone"})
        check(count is not None and count >= 4, f"request_duration_seconds_count{{/v1/systemone}} = {count}")
    return check.problems


def small_latency_beside(server, big_request, check):
    """The median latency (ms) of a small request on one connection alone and while two other
    connections send `big_request` back to back; and the big requests' statuses."""
    small = json.dumps(body_for("mock-ramp")).encode()
    small_request = h.build_request("POST", "/v1/systemone", [("Content-Type", "application/json")], small) + small

    def timed_small(conn):
        start = time.monotonic()
        conn.send_all(small_request)
        response = conn.read_response("POST", timeout=10)
        check(response.status == 200, f"small request: {response.status} {response.body[:200]!r}")
        return time.monotonic() - start

    stop = threading.Event()
    big_answers = []

    def flood():
        # Prebuilt bytes on a raw socket: the sending thread spends its time in sendall and recv,
        # outside the interpreter lock, so the server is kept busy.
        with h.Connection(server, timeout=30) as conn:
            while not stop.is_set():
                conn.send_all(big_request)
                big_answers.append(conn.read_response("POST", timeout=30).status)

    with h.Connection(server, timeout=10) as conn:
        for _ in range(5):
            timed_small(conn)
        alone = sorted(timed_small(conn) for _ in range(20))
        flooders = [threading.Thread(target=flood) for _ in range(2)]
        for thread in flooders:
            thread.start()
        try:
            time.sleep(0.5)
            during = []
            for _ in range(30):
                during.append(timed_small(conn))
                time.sleep(0.02)
        finally:
            stop.set()
            for thread in flooders:
                thread.join()
    during.sort()
    return alone[len(alone) // 2] * 1e3, during[len(during) // 2] * 1e3, big_answers


def test_large_bodies_do_not_delay_others():
    """Issue 19 item 3: with one I/O thread, 4 MiB bodies on two connections (parsed, validated and
    tokenised on the prepare pool) do not delay a small request on a third connection: its median
    latency stays within a few milliseconds of its latency alone (it was ~100 ms when that work ran
    on the I/O thread)."""
    check = Checker()
    with start_server("large-bodies", "--model", "mock:ramp", "--http-threads", "1", "--port", "0") as server:
        state = "word " * ((4 * 1024 * 1024 - 200) // 5)
        big = json.dumps({"model": "mock-ramp", "state": state, "questions": {"q": NOUL}}).encode()
        check(len(big) <= 4 * 1024 * 1024, f"the large body is {len(big)} bytes, over the default limit")
        big_request = h.build_request("POST", "/v1/systemone", [("Content-Type", "application/json")], big) + big
        alone_ms, during_ms, big_answers = small_latency_beside(server, big_request, check)
        check(len(big_answers) >= 2 and set(big_answers) == {400},
              f"large bodies answered {big_answers}, expected 400 max_tokens_exceeded for each (at least 2)")
        check(during_ms <= alone_ms + 10.0,
              f"small request median {during_ms:.1f} ms beside 4 MiB bodies, {alone_ms:.1f} ms alone")
    return check.problems


def test_compressed_bodies_do_not_delay_others():
    """Issue 19 item 3: the same with 4 MiB gzip bodies that inflate to 14 MiB (under a 16 MiB body
    limit) of text that is not JSON: decoded on the prepare pool, the small request's median stays
    within a few milliseconds (0.2-0.4 ms measured; 31-34 ms when bodies were decoded on the I/O
    thread)."""
    check = Checker()
    with start_server("compressed-bodies", "--model", "mock:ramp", "--http-threads", "1", "--max-body",
                      str(16 * 1024 * 1024), "--port", "0") as server:
        # Random letters of four (two bits each): about 3.5 to 1 under gzip, so decoding has work to do.
        # Not JSON: refused at its first byte once decoded, so decoding is each request's whole cost.
        letters = ["".join("abcd"[(byte >> shift) & 3] for shift in (0, 2, 4, 6)) for byte in range(256)]
        raw = "".join(letters[byte] for byte in os.urandom(14 * 1024 * 1024 // 4)).encode()
        big = gzip.compress(raw, compresslevel=6)
        check(3 * 1024 * 1024 <= len(big) <= 5 * 1024 * 1024 and 4 * 1024 * 1024 < len(raw) <= 16 * 1024 * 1024,
              f"the gzip body is {len(big)} bytes for {len(raw)}")
        headers = [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]
        big_request = h.build_request("POST", "/v1/systemone", headers, big) + big
        alone_ms, during_ms, big_answers = small_latency_beside(server, big_request, check)
        check(len(big_answers) >= 2 and set(big_answers) == {422},
              f"gzip bodies answered {big_answers}, expected 422 json_invalid for each (at least 2)")
        check(during_ms <= alone_ms + 10.0,
              f"small request median {during_ms:.1f} ms beside 4 MiB gzip bodies, {alone_ms:.1f} ms alone")
    return check.problems


def test_batch_route():
    """POST /v1/systemone/batch (contract 11.5): items answered on their own and in order (200, 400,
    422, 400 in one batch), each as /v1/systemone answers it; 422 for a body that is not such an
    object, 413 for a whole body over the limit, and the same results through a router."""
    check = Checker()
    ramp = body_for("mock-ramp")
    letters = {"model": "mock-letters", "state": STATE, "questions": {"q": NOUL}}
    items = [ramp, {"model": "nope", "state": STATE, "questions": {"q": NOUL}}, {"state": STATE}, letters]
    with start_server("batch", "--model", "mock:ramp", "--model", "mock:letters", "--max-body", "20000",
                      "--port", "0") as worker:
        alone = [post(worker, item) for item in items]
        response = post(worker, {"requests": items}, path="/v1/systemone/batch")
        check(response.status == 200, f"batch: {response.status} {response.body[:300]!r}")
        results = response.json().get("results", []) if response.status == 200 else []
        check([r.get("status") for r in results] == [200, 400, 422, 400],
              f"statuses {[r.get('status') for r in results]}, expected [200, 400, 422, 400]")
        for index, (result, single) in enumerate(zip(results, alone)):
            expected = dict(single.json(), status=single.status)
            check(result == expected, f"item {index}: {result} differs from /v1/systemone's {expected}")

        for body, label in (([ramp], "an array"), ({"requests": []}, "no items"),
                            ({"requests": [ramp], "model": "mock-ramp"}, "an extra member")):
            refused = post(worker, body, path="/v1/systemone/batch")
            check(refused.status == 422, f"{label}: {refused.status}, expected 422")
            if refused.status == 422:
                check(isinstance(refused.json().get("detail"), list), f"{label}: {refused.body[:200]!r}")
        over = post(worker, {"requests": [ramp] * 200}, path="/v1/systemone/batch")
        check(over.status == 413, f"a batch body over --max-body: {over.status}, expected 413")

        with start_server("batch-router", "--upstream", f"mock-ramp=http://127.0.0.1:{worker.port}",
                          "--port", "0") as router:
            routed = post(router, {"requests": [ramp, {"state": STATE}, ramp]}, path="/v1/systemone/batch")
            check(routed.status == 200, f"through the router: {routed.status} {routed.body[:300]!r}")
            if routed.status == 200:
                statuses = [r.get("status") for r in routed.json()["results"]]
                check(statuses == [200, 422, 200], f"through the router: statuses {statuses}")
                check(routed.json()["results"][0] == results[0] if results else False,
                      "through the router: the first item differs from the worker's own batch answer")
    return check.problems


def test_batch_within_a_small_queue():
    """A bulk request alone never refuses its own items: with `--queue 1` (one waiting plus the one
    running) three 3 s mock:slow items are all answered 200, two in flight at a time."""
    check = Checker()
    with start_server("batch-queue", "--model", "mock:slow", "--queue", "1", "--port", "0") as worker:
        response = post(worker, {"requests": [body_for("mock-slow")] * 3}, path="/v1/systemone/batch", timeout=60)
        check(response.status == 200, f"batch: {response.status} {response.body[:300]!r}")
        if response.status == 200:
            statuses = [r.get("status") for r in response.json()["results"]]
            check(statuses == [200, 200, 200], f"statuses {statuses}, expected three 200s")
    return check.problems


def test_router_overload_status():
    """overload_status 529 applies to a router's full upstream pool too (max_in_flight 1, a 3 s worker):
    of two concurrent requests one is answered 200, the other 529 overloaded at once."""
    check = Checker()
    with start_server("overload-worker", "--model", "mock:slow", "--port", "0") as worker:
        with tempfile.TemporaryDirectory() as directory:
            config = os.path.join(directory, "router.json")
            with open(config, "w", encoding="utf-8") as out:
                json.dump({"port": 0, "overload_status": 529, "models": [
                    {"name": "mock-slow", "upstream": {"urls": [f"http://127.0.0.1:{worker.port}"],
                                                       "max_in_flight": 1}}]}, out)
            with start_server("overload-router", "--config", config) as router:
                results = h.concurrent_requests(router, [body_for("mock-slow")] * 2, stagger=0.2, timeout=20)
                statuses = sorted(r.status if not isinstance(r, Exception) else repr(r) for r, _ in results)
                check(statuses == [200, 529], f"statuses {statuses}, expected [200, 529]")
                for response, seconds in results:
                    if not isinstance(response, Exception) and response.status == 529:
                        problems = []
                        h.check_error_envelope(response, 529, "overloaded", problems)
                        check.extend(problems, "529: ")
                        check(seconds < 1.5, f"529 took {seconds:.2f}s, expected at once")
    return check.problems


TESTS = [test_i57, test_i58, test_overload, test_shutdown_while_busy, test_disconnect_while_queued, test_deadline,
         test_oversize, test_auth, test_keep_alive_head_metrics, test_large_bodies_do_not_delay_others,
         test_compressed_bodies_do_not_delay_others,
         test_batch_route, test_batch_within_a_small_queue, test_router_overload_status]


def run_one(test):
    start = time.monotonic()
    try:
        problems = test()
    except Exception as error:  # noqa: BLE001 - reported as a failure
        problems = [f"{type(error).__name__}: {error}", traceback.format_exc()]
    return test, problems, time.monotonic() - start


def main(tests=None, doc=__doc__):
    """Runs `tests` (this file's TESTS by default) with the command line `doc` describes."""
    global BINARY, KEEP_LOGS
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--filter", default=None, help="regular expression on test names")
    parser.add_argument("--serial", action="store_true", help="run the tests one after another")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    BINARY = os.path.abspath(args.binary)
    KEEP_LOGS = args.keep_logs
    h.install_signal_handlers()
    tests = [t for t in tests or TESTS if not args.filter or re.search(args.filter, t.__name__)]
    passed = failed = 0
    start = time.monotonic()
    try:
        workers = 1 if args.serial else len(tests) or 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            for future in concurrent.futures.as_completed([pool.submit(run_one, t) for t in tests]):
                test, problems, seconds = future.result()
                name = test.__name__[len("test_"):]
                if problems:
                    failed += 1
                    print(f"FAIL {name} ({seconds:.1f} s): {test.__doc__.split(chr(10))[0]}", flush=True)
                    for problem in problems:
                        print(f"     - {problem}", flush=True)
                else:
                    passed += 1
                    print(f"PASS {name} ({seconds:.1f} s)", flush=True)
    finally:
        h.Server.stop_all()
        for server in LOGS:
            if KEEP_LOGS:
                print(f"log {server.name}: {server.log.name}")
            else:
                server.cleanup_log()
    print(f"# {time.monotonic() - start:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


def run_as_script(main_function):
    try:
        sys.exit(main_function())
    except KeyboardInterrupt:
        h.Server.stop_all()
        print("interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    run_as_script(main)
