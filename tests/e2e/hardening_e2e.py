#!/usr/bin/env python3
"""HTTP and process hardening of s1serve (contract §11.1, §11.6): the real binary over raw sockets.

Usage: hardening_e2e.py --binary path/to/s1serve [--filter REGEX] [--serial] [--keep-logs]

Signals (SIGPIPE ignored, SIGHUP drains, 503 past the drain budget), framing refusals answered
with their RFC status and a close, lingering close after 413, the header timeout (408), the
connection cap and the back-off at the descriptor limit, NUL bytes, Content-Encoding, multipart
bodies as the official SDK writes them, request id and traceparent headers, /livez and /readyz,
and the access log. Python standard library only (plus the `zstd` command for zstd bodies).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_e2e as e  # noqa: E402
from run_e2e import Checker, h, post, start_server  # noqa: E402

RAMP = {"model": "mock-ramp", "state": e.STATE, "questions": {"q": e.NOUL}}
RAMP_BYTES = json.dumps(RAMP, separators=(",", ":")).encode()
JSON = [("Content-Type", "application/json")]


def raw_exchange(server, data, timeout=5.0):
    """Sends `data` on a fresh connection; the response and whether the server closed afterwards."""
    with h.Connection(server, timeout=timeout) as conn:
        conn.send_all(data)
        response = conn.read_response("POST", timeout=timeout)
        return response, conn.at_eof(2.0)


def post_bytes(server, body, headers, path="/v1/systemone", timeout=10.0):
    return h.request(server, "POST", path, headers=list(headers), body=body, timeout=timeout)


def expect_error(check, response, status, error_type, label):
    problems = []
    h.check_error_envelope(response, status, error_type, problems)
    check.extend(problems, f"{label}: ")


def expect_json_invalid(check, response, label):
    try:
        ok = response.status == 422 and response.json()["detail"][0]["type"] == "json_invalid"
    except (ValueError, KeyError, IndexError, TypeError):
        ok = False
    check(ok, f"{label}: {response.status} {response.body[:200]!r}, expected 422 json_invalid")


def zstd_compress(data):
    return subprocess.run(["zstd", "-q", "-c", "-"], input=data, stdout=subprocess.PIPE, check=True).stdout


def sdk_multipart(parts):
    """typesafe_sdk._core.multipart.encode_multipart's layout: (content type, body)."""
    boundary = "5f0c3f7d2a6b4c1e9d8a7b6c5d4e3f21"
    chunks = []
    for name, content_type, content, filename in parts:
        disposition = f'form-data; name="{name}"' + ("" if filename is None else f'; filename="{filename}"')
        chunks += [f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: {content_type}\r\n\r\n".encode(),
                   content, b"\r\n"]
    chunks.append(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", b"".join(chunks)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------------------------------
# Signals and drain


def test_sighup_drains():
    """SIGHUP drains like SIGTERM: a request in flight is answered 200 and the process exits 0."""
    check = Checker()
    server = start_server("sighup", "--model", "mock:slow", "--port", "0")
    try:
        result = {}
        thread = threading.Thread(target=lambda: result.update(r=post(server, "mock-slow", timeout=20)), daemon=True)
        thread.start()
        time.sleep(0.5)
        server.signal(signal.SIGHUP)
        thread.join(20)
        response = result.get("r")
        check(response is not None and response.status == 200,
              f"in-flight request during the SIGHUP drain: {response and response.status}")
        code = e.exit_code(server)
        check(code == 0, f"exit code {code} after SIGHUP, expected 0 (a drain, not death by the signal)")
    finally:
        server.stop()
    return check.problems


def test_sigpipe_ignored():
    """The log goes to a pipe whose reader is gone: SIGTERM's drain writes to it and must still exit 0."""
    check = Checker()
    proc = subprocess.Popen([e.BINARY, "serve", "--model", "mock:ramp", "--port", "0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        seen = b""
        while b"listening on" not in seen and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        check(b"listening on" in seen, f"no 'listening on' line: {seen[-300:]!r}")
        proc.stdout.close()  # the reader dies: the next log write raises SIGPIPE
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"exit code {code} with a dead log pipe, expected 0 (-13 is death by SIGPIPE)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return check.problems


def test_drain_budget_spent():
    """--drain-ms 800, one mock-slow request running and two queued at SIGTERM: every request gets a
    whole HTTP answer (the queued ones 503 model_unavailable once the budget is spent), never a bare
    close, and the process exits 0."""
    check = Checker()
    server = start_server("drain-budget", "--model", "mock:slow", "--queue", "4", "--drain-ms", "800", "--port", "0")
    try:
        threads, results = e.posts_in_flight(server, "mock-slow", 3, stagger=0.1)
        time.sleep(0.3)
        server.signal(signal.SIGTERM)
        for thread in threads:
            thread.join(20)
        unavailable = 0
        for index, (response, seconds) in enumerate(results):
            if isinstance(response, Exception):
                check(False, f"request {index}: no answer ({type(response).__name__}: {response})")
                continue
            if response.status == 503:
                unavailable += 1
                expect_error(check, response, 503, "model_unavailable", f"request {index}")
                check(seconds < 2.5, f"request {index}: 503 after {seconds:.1f} s, expected at the budget (~1 s)")
            else:
                check(response.status == 200, f"request {index}: {response.status} {response.body[:200]!r}")
        check(unavailable >= 2, f"{unavailable} x 503: the two queued requests should get 503")
        code = e.exit_code(server)
        check(code == 0, f"exit code {code}, expected 0")
    finally:
        server.stop()
    return check.problems


# --------------------------------------------------------------------------------------------------
# Framing, timeouts, connections


FRAMING_CASES = [
    ("Content-Length not a number", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
    ("conflicting Content-Length",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
    ("Content-Length with chunked",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ("chunked then Content-Length",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400),
    ("gzip Transfer-Encoding with Content-Length",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n", 400),
    ("Transfer-Encoding gzip", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ("Transfer-Encoding gzip, chunked",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    ("bad chunk size",
     b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\nabc\r\n0\r\n\r\n", 400),
    ("target over 8 KiB", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    ("target over the header limit", b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    ("header block over 64 KiB",
     b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(700))
     + b"\r\n", 431),
    ("HTTP/2.0", b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ("HTTP/1.2", b"GET /health HTTP/1.2\r\nHost: x\r\n\r\n", 505),
    ("HTTP/1.1 without Host", b"GET /health HTTP/1.1\r\n\r\n", 400),
    ("HTTP/1.1 with two Hosts", b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("not a request line", b"HELLO\r\n\r\n", 400),
    ("field without a colon", b"GET /health HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n", 400),
]


def test_framing_refusals():
    """Each malformed framing of §11.6 is answered with its status in the error envelope, carries
    both request id headers, and the connection is closed after it."""
    check = Checker()
    with start_server("framing", "--model", "mock:ramp", "--port", "0") as server:
        for label, data, status in FRAMING_CASES:
            try:
                response, closed = raw_exchange(server, data)
            except (OSError, h.ProtocolError) as error:
                check(False, f"{label}: no answer ({type(error).__name__}: {error})")
                continue
            check(response.status == status, f"{label}: {response.status}, expected {status}")
            check(response.closed, f"{label}: no Connection: close")
            check(closed, f"{label}: the connection stayed open")
            check(response.header("x-request-id") and
                  response.header("x-typesafe-request-id") == response.header("x-request-id"),
                  f"{label}: request id headers {response.header('x-request-id')!r} "
                  f"{response.header('x-typesafe-request-id')!r}")
            try:
                body = response.json()
                check(isinstance(body.get("detail"), dict) and "error_type" in body["detail"],
                      f"{label}: body {response.body[:200]!r}")
            except ValueError:
                check(False, f"{label}: body not JSON: {response.body[:200]!r}")
        # HTTP/1.0 needs no Host.
        response, _ = raw_exchange(server, b"GET /health HTTP/1.0\r\n\r\n")
        check(response.status == 200, f"HTTP/1.0 without Host: {response.status}")
        check(server.proc.poll() is None, "the server died")
    return check.problems


def test_lingering_close_after_413():
    """A client that sends its whole 8 MiB body before reading (--max-body 1000000) still reads the
    413: the server reads and discards the rest before closing instead of resetting the connection."""
    check = Checker()
    with start_server("linger", "--model", "mock:ramp", "--max-body", "1000000", "--port", "0") as server:
        body = b"x" * (8 << 20)
        head = h.build_request("POST", "/v1/systemone", JSON, body)
        with h.Connection(server, timeout=10) as conn:
            try:
                conn.sock.sendall(head + body)
                response = conn.read_response("POST", timeout=10)
                expect_error(check, response, 413, "payload_too_large", "413")
                check(conn.at_eof(6.0), "the connection stayed open after the 413")
            except (OSError, h.ProtocolError) as error:
                check(False, f"the 413 was lost: {type(error).__name__}: {error}")
    return check.problems


def test_header_timeout():
    """--header-timeout-ms 1000: a stalled header and a silent new connection get 408 and a close at
    about 1 s; a kept-alive connection may idle longer between requests."""
    check = Checker()
    with start_server("header-timeout", "--model", "mock:ramp", "--header-timeout-ms", "1000", "--port", "0") as server:
        for label, data in (("stalled header", b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"), ("silent", b"")):
            with h.Connection(server, timeout=5) as conn:
                start = time.monotonic()
                if data:
                    conn.send_all(data)
                try:
                    response = conn.read_response("GET", timeout=5)
                    seconds = time.monotonic() - start
                    expect_error(check, response, 408, "request_timeout", label)
                    check(0.8 <= seconds <= 2.5, f"{label}: 408 after {seconds:.2f} s, expected ~1 s")
                    check(conn.at_eof(1.0), f"{label}: the connection stayed open after 408")
                except (OSError, h.ProtocolError) as error:
                    check(False, f"{label}: no 408 ({type(error).__name__}: {error})")
        with h.Connection(server, timeout=5) as conn:
            first = h.request(server, "GET", "/health", connection=conn)
            check(first.status == 200, f"kept-alive first request: {first.status}")
            time.sleep(1.6)
            second = h.request(server, "GET", "/health", connection=conn)
            check(second.status == 200, f"kept-alive request after 1.6 s idle: {second.status}")
    return check.problems


def test_connection_cap():
    """--max-connections 2: a third connection is not served while two are open, is served once one
    closes, and the cap is logged once."""
    check = Checker()
    with start_server("cap", "--model", "mock:ramp", "--max-connections", "2", "--port", "0") as server:
        time.sleep(0.2)  # the readiness polls' connections have closed
        first, second = h.Connection(server, timeout=5), h.Connection(server, timeout=5)
        try:
            for conn in (first, second):
                check(h.request(server, "GET", "/health", connection=conn).status == 200, "open connection's /health")
            third = h.Connection(server, timeout=5)
            try:
                third.send_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    early = third.read_response("GET", timeout=0.8)
                    check(False, f"a third connection was served over the cap: {early.status}")
                except socket.timeout:
                    pass
                first.close()
                response = third.read_response("GET", timeout=3)
                check(response.status == 200, f"third connection once one closed: {response.status}")
            finally:
                third.close()
        finally:
            first.close()
            second.close()
        log = server.log_text()
        check(log.count("accepting no more until one closes") == 1, "the cap was not logged exactly once")
    return check.problems


def test_descriptor_limit_back_off():
    """Started with 'ulimit -n 40' and sent 60 connections: accept fails at the descriptor limit, which
    is logged once, the server does not spin (under 0.3 s of CPU in 1.5 s), and it serves again once
    the connections close."""
    check = Checker()
    wrapper_dir = tempfile.mkdtemp(prefix="s1serve-fdlimit-")
    wrapper = os.path.join(wrapper_dir, "s1serve")
    with open(wrapper, "w") as handle:
        handle.write(f"#!/bin/sh\nulimit -n 40\nexec {e.BINARY} \"$@\"\n")
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
    server = h.Server(wrapper, ["--model", "mock:ramp", "--port", "0"], name="fdlimit")
    e.LOGS.append(server)
    server.start()
    sockets = []
    try:
        for _ in range(60):
            sockets.append(socket.create_connection((server.host, server.port), timeout=5))
        time.sleep(0.5)
        before = cpu_seconds(server.proc.pid)
        time.sleep(1.5)
        used = cpu_seconds(server.proc.pid) - before
        check(used < 0.3, f"{used:.2f} s of CPU in 1.5 s at the descriptor limit: the accept loop spins")
        check(server.log_text().count("cannot accept a connection") == 1, "the descriptor limit was not logged once")
        for sock in sockets:
            sock.close()
        sockets.clear()
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline and status != 200:
            try:
                status = h.request(server, "GET", "/health", timeout=2).status
            except OSError:
                time.sleep(0.2)
        check(status == 200, f"/health after the connections closed: {status}")
    finally:
        for sock in sockets:
            sock.close()
        server.stop()
        shutil.rmtree(wrapper_dir, ignore_errors=True)
    return check.problems


# --------------------------------------------------------------------------------------------------
# Bodies


def test_nul_bytes():
    """A raw NUL byte after a valid JSON value or inside a string is 422 json_invalid, served locally
    or through the router, which does not forward it."""
    check = Checker()
    with start_server("nul-worker", "--model", "mock:ramp", "--port", "0") as worker, \
            start_server("nul-router", "--upstream", f"mock-ramp=http://127.0.0.1:{worker.port}", "--port", "0") as router:
        for target in (worker, router):
            for label, data in (("after the value", RAMP_BYTES + b"\x00garbage"),
                                ("inside a string", RAMP_BYTES.replace(b"charged", b"char\x00ged"))):
                response = post_bytes(target, data, JSON)
                expect_json_invalid(check, response, f"{'router' if target is router else 'local'} {label}")
        metrics = h.request(worker, "GET", "/metrics").body.decode()
        forwarded = e.metric_value(metrics, "s1serve_requests_total", {"route": "/v1/systemone", "status": "422"})
        check(forwarded == 2, f"the worker counted {forwarded} 422s: only its own two, the router forwarded none")
        ok = post_bytes(router, RAMP_BYTES, JSON)
        check(ok.status == 200, f"router without NUL: {ok.status} {ok.body[:200]!r}")
    return check.problems


def test_content_encoding():
    """gzip, deflate (zlib and raw) and zstd bodies are decoded on both POST routes and through the
    router; other codings or a list are 415, broken data is 400 invalid_body_encoding, and a body
    over --max-body once decoded is 413 however small it is on the wire."""
    check = Checker()
    with start_server("ce-worker", "--model", "mock:ramp", "--max-body", "200000", "--port", "0") as worker, \
            start_server("ce-router", "--upstream", f"mock-ramp=http://127.0.0.1:{worker.port}", "--port", "0") as router:
        plain = post_bytes(worker, RAMP_BYTES, JSON)
        check(plain.status == 200, f"plain: {plain.status}")
        raw = zlib.compressobj(wbits=-15)
        encoded = {
            "gzip": gzip.compress(RAMP_BYTES),
            "deflate": zlib.compress(RAMP_BYTES),
            "zstd": zstd_compress(RAMP_BYTES),
        }
        raw_deflate = raw.compress(RAMP_BYTES) + raw.flush()
        cases = [(coding, data) for coding, data in encoded.items()] + [("deflate", raw_deflate), ("GZIP", encoded["gzip"])]
        for coding, data in cases:
            response = post_bytes(worker, data, JSON + [("Content-Encoding", coding)])
            check(response.status == 200 and response.json()["answers"] == plain.json()["answers"],
                  f"{coding}: {response.status} {response.body[:200]!r}")
        response = post_bytes(router, zstd_compress(RAMP_BYTES), JSON + [("Content-Encoding", "zstd")])
        check(response.status == 200, f"zstd through the router: {response.status} {response.body[:200]!r}")
        decisions = {"model": "mock-ramp", "input": e.STATE,
                     "questions": [{"type": "predicate", "instructions": "Refund?"}]}
        response = post_bytes(worker, gzip.compress(json.dumps(decisions).encode()),
                              JSON + [("Content-Encoding", "gzip")], path="/v1/decisions")
        check(response.status == 200, f"gzip on /v1/decisions: {response.status} {response.body[:200]!r}")
        for label, headers in (("br", [("Content-Encoding", "br")]),
                               ("a list", [("Content-Encoding", "gzip, zstd")]),
                               ("two fields", [("Content-Encoding", "gzip"), ("Content-Encoding", "gzip")])):
            response = post_bytes(worker, encoded["gzip"], JSON + headers)
            expect_error(check, response, 415, "unsupported_media_type", label)
        for coding in ("gzip", "deflate", "zstd"):
            broken = encoded[coding][: len(encoded[coding]) // 2]
            response = post_bytes(worker, broken, JSON + [("Content-Encoding", coding)])
            expect_error(check, response, 400, "invalid_body_encoding", f"cut {coding}")
        bomb_json = b'{"state":"' + b" " * 50_000_000 + b'"}'
        for coding, bomb in (("zstd", zstd_compress(bomb_json)), ("gzip", gzip.compress(bomb_json, 9))):
            check(len(bomb) < 200_000, f"{coding} bomb is {len(bomb)} bytes on the wire")
            response = post_bytes(worker, bomb, JSON + [("Content-Encoding", coding)])
            expect_error(check, response, 413, "payload_too_large", f"{coding} bomb")
        with open(f"/proc/{worker.proc.pid}/status") as handle:
            peak = int(re.search(r"VmHWM:\s+(\d+) kB", handle.read()).group(1))
        check(peak < 400_000, f"worker peak RSS {peak} kB after the bombs")
    return check.problems


def test_multipart():
    """multipart/form-data as the official SDK writes it: the `request` part is served as the JSON
    body (also zstd-compressed as a whole); an asset part no asset claims is 400 invalid_media, a malformed body
    or a missing boundary 400 invalid_multipart, NUL in the part 422, and /v1/decisions refuses it."""
    check = Checker()
    with start_server("multipart", "--model", "mock:ramp", "--port", "0") as server:
        plain = post_bytes(server, RAMP_BYTES, JSON)
        content_type, body = sdk_multipart([("request", "application/json", RAMP_BYTES, None)])
        response = post_bytes(server, body, [("Content-Type", content_type)])
        check(response.status == 200 and response.json()["answers"] == plain.json()["answers"],
              f"request part: {response.status} {response.body[:200]!r}")
        response = post_bytes(server, zstd_compress(body), [("Content-Type", content_type), ("Content-Encoding", "zstd")])
        check(response.status == 200, f"zstd multipart: {response.status} {response.body[:200]!r}")
        _, with_asset = sdk_multipart([("request", "application/json", RAMP_BYTES, None),
                                       ("asset-0", "image/png", b"\x89PNG\r\n\x1a\n", "asset-0")])
        response = post_bytes(server, with_asset, [("Content-Type", content_type)])
        expect_error(check, response, 400, "invalid_media", "an asset part no asset claims")
        response = post_bytes(server, body[:-20], [("Content-Type", content_type)])
        expect_error(check, response, 400, "invalid_multipart", "no closing delimiter")
        response = post_bytes(server, body, [("Content-Type", "multipart/form-data")])
        expect_error(check, response, 400, "invalid_multipart", "no boundary")
        _, other = sdk_multipart([("other", "application/json", RAMP_BYTES, None)])
        response = post_bytes(server, other, [("Content-Type", content_type)])
        expect_error(check, response, 400, "invalid_multipart", "no request part")
        _, nul = sdk_multipart([("request", "application/json", RAMP_BYTES + b"\x00", None)])
        response = post_bytes(server, nul, [("Content-Type", content_type)])
        expect_json_invalid(check, response, "NUL in the request part")
        _, broken = sdk_multipart([("request", "application/json", b"{\"state\":", None)])
        response = post_bytes(server, broken, [("Content-Type", content_type)])
        expect_json_invalid(check, response, "invalid JSON in the request part")
        response = post_bytes(server, body, [("Content-Type", content_type)], path="/v1/decisions")
        check(response.status == 415, f"multipart on /v1/decisions: {response.status}")
    return check.problems


# --------------------------------------------------------------------------------------------------
# Identity, probes, access log


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_request_ids_and_traceparent():
    """x-typesafe-request-id equals x-request-id on every response; a valid traceparent is echoed and,
    without a valid x-request-id, gives the request id."""
    check = Checker()
    with start_server("ids", "--model", "mock:ramp", "--port", "0") as server:
        for label, response in (("200", post(server, "mock-ramp")), ("404", h.request(server, "GET", "/nope")),
                                ("422", post_bytes(server, b"{", JSON))):
            check(response.header("x-request-id") and
                  response.header("x-typesafe-request-id") == response.header("x-request-id"),
                  f"{label}: {response.header('x-request-id')!r} vs {response.header('x-typesafe-request-id')!r}")
            check(response.header("traceparent") is None, f"{label}: traceparent without one sent")
        traced = post(server, "mock-ramp", headers={"traceparent": TRACEPARENT})
        check(traced.header("x-request-id") == "4bf92f3577b34da6a3ce929d0e0e4736",
              f"request id from traceparent: {traced.header('x-request-id')!r}")
        check(traced.header("x-typesafe-request-id") == "4bf92f3577b34da6a3ce929d0e0e4736", "x-typesafe-request-id")
        check(traced.header("traceparent") == TRACEPARENT, f"traceparent echoed: {traced.header('traceparent')!r}")
        both = post(server, "mock-ramp", headers={"traceparent": TRACEPARENT, "x-request-id": "mine-1"})
        check(both.header("x-request-id") == "mine-1", f"x-request-id kept: {both.header('x-request-id')!r}")
        check(both.header("traceparent") == TRACEPARENT, "traceparent echoed beside x-request-id")
        bad = post(server, "mock-ramp", headers={"traceparent": TRACEPARENT.upper()})
        check(bad.header("traceparent") is None, "an invalid traceparent was echoed")
        check(bad.header("x-request-id") != "4BF92F3577B34DA6A3CE929D0E0E4736", "an invalid traceparent gave the id")
    return check.problems


def test_probes():
    """/livez and /readyz answer GET and HEAD without the API key; /readyz has /health's status and
    body (503 for a failed model, without Retry-After since it is not warming)."""
    check = Checker()
    with start_server("probes", "--model", "mock:ramp", "--port", "0", env={"S1SERVE_API_KEYS": "k1"}) as server:
        live = h.request(server, "GET", "/livez")
        check(live.status == 200 and live.json() == {"status": "ok"}, f"/livez: {live.status} {live.body!r}")
        head = h.request(server, "HEAD", "/livez")
        check(head.status == 200 and head.body in (b"", None), f"HEAD /livez: {head.status} {head.body!r}")
        ready = h.request(server, "GET", "/readyz")
        health = h.request(server, "GET", "/health")
        check(ready.status == 200 and ready.json() == health.json(), f"/readyz: {ready.status} {ready.body[:200]!r}")
        check(h.request(server, "HEAD", "/readyz").status == 200, "HEAD /readyz")
        check(h.request(server, "POST", "/livez", body=b"").status == 405, "POST /livez is 405")
    with start_server("probes-broken", "--model", "mock:broken", "--port", "0") as server:
        ready = h.request(server, "GET", "/readyz")
        check(ready.status == 503 and ready.json().get("status") == "failed", f"/readyz failed: {ready.status}")
        check(ready.header("Retry-After") is None, "Retry-After on a failed model")
        check(h.request(server, "GET", "/livez").status == 200, "/livez with a failed model")
    return check.problems


def test_access_log():
    """One info line per request with method, path, status, duration, request id and model; never
    the body, the query or the API key."""
    check = Checker()
    with start_server("access-log", "--model", "mock:ramp", "--port", "0", env={"S1SERVE_API_KEYS": "secret-key-1"}) as server:
        response = post(server, RAMP, headers={"Authorization": "Bearer secret-key-1", "x-request-id": "log-check-1"},
                        path="/v1/systemone?api_key=query-secret")
        check(response.status == 200, f"request: {response.status}")
        unauthorized = post(server, RAMP, headers={"x-request-id": "log-check-2"})
        check(unauthorized.status == 401, f"no key: {unauthorized.status}")
        time.sleep(0.2)
        log = server.log_text()
        check(re.search(r"POST /v1/systemone 200 [0-9.]+ms request_id=log-check-1 model=mock-ramp", log),
              "no access line for the 200: " + log[-600:])
        check(re.search(r"POST /v1/systemone 401 [0-9.]+ms request_id=log-check-2 model=-", log),
              "no access line for the 401")
        for secret in ("secret-key-1", "query-secret", "charged twice"):
            check(secret not in log, f"the log shows {secret!r}")
        # Lines wait a few milliseconds to be written together: the last request's is written at exit.
        last = post(server, RAMP, headers={"Authorization": "Bearer secret-key-1", "x-request-id": "log-check-last"})
        check(last.status == 200, f"last request: {last.status}")
        check(server.stop() == 0, "stop")
        log = server.log_text()
        line, stopped = log.find("request_id=log-check-last "), log.find("] stopped\n")
        check(0 <= line < stopped, "no access line for the last request before 'stopped': " + log[-600:])
    return check.problems


def test_readyz_while_warming():
    """A model from its first moment: /readyz is 503 with Retry-After: 1 while it loads or warms (as
    /health says), /livez 200 all along, then /readyz 200 without Retry-After. mock:slow's warm-up
    takes 3 s, so the warming is seen however fast the machine (MiniLM's took milliseconds, and an
    idle machine could be ready before the first probe)."""
    check = Checker()
    server = h.Server(e.BINARY, ["--model", "mock:slow", "--port", "0"], name="readyz-warming")
    e.LOGS.append(server)
    try:
        server.start(wait_health=False)
        warming_seen = False
        deadline = time.monotonic() + 60
        ready = None
        while time.monotonic() < deadline:
            ready = h.request(server, "GET", "/readyz", timeout=5)
            if ready.status == 200:
                break
            warming_seen = True
            check(ready.status == 503 and ready.json().get("status") == "starting",
                  f"/readyz while starting: {ready.status} {ready.body[:200]!r}")
            check(ready.header("Retry-After") == "1", f"/readyz while starting: Retry-After {ready.header('Retry-After')!r}")
            check(h.request(server, "GET", "/livez", timeout=5).status == 200, "/livez while starting")
            time.sleep(0.005)
        check(warming_seen, "never saw the model loading or warming")
        check(ready is not None and ready.status == 200 and ready.header("Retry-After") is None,
              f"/readyz once warm: {ready and ready.status}")
    finally:
        server.stop()
    return check.problems


TESTS = [test_sighup_drains, test_sigpipe_ignored, test_drain_budget_spent, test_framing_refusals,
         test_lingering_close_after_413, test_header_timeout, test_connection_cap, test_descriptor_limit_back_off,
         test_nul_bytes, test_content_encoding, test_multipart, test_request_ids_and_traceparent, test_probes,
         test_readyz_while_warming, test_access_log]


def main():
    return e.main(TESTS, __doc__)


if __name__ == "__main__":
    e.run_as_script(main)
