"""Shared test harness for the s1serve conformance corpus and the e2e tests.

Standard library only. It starts the real binary, waits for readiness, talks raw HTTP/1.1 over
sockets (so malformed requests, chunked uploads and stalls are possible) and checks the invariants
of reference/system-one-api.md §8.4.
"""

from __future__ import annotations

import base64
import ctypes
import json
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict

HEX32 = re.compile(r"^[0-9a-f]{32}$")
REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:+/=-]{1,128}$")
SERVER_TIMING_ENTRY = re.compile(r"^\s*([A-Za-z0-9_-]+);dur=(\d+(?:\.\d{1,3})?)\s*$")


# --------------------------------------------------------------------------------------------------
# Server processes


def _set_parent_death_signal():
    """Child side of Popen: die with the runner even if it is SIGKILLed (ctest timeout)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # not Linux: the runner's finally blocks still clean up
        pass


class Server:
    """One s1serve process. Use as a context manager, or call stop() in a finally block."""

    _live: "list[Server]" = []

    def __init__(self, binary, args, cwd=None, env=None, name="server"):
        self.binary = binary
        self.args = list(args)
        self.cwd = cwd
        self.name = name
        self.env = dict(os.environ)
        self.env.pop("S1SERVE_API_KEYS", None)
        if env:
            self.env.update(env)
        self.proc = None
        self.port = None
        self.host = "127.0.0.1"
        self.log = tempfile.NamedTemporaryFile(prefix=f"s1serve-{name}-", suffix=".log", delete=False)

    def start(self, ready_timeout=30.0, wait_health=True):
        cmd = [self.binary, "serve"] + self.args
        self.proc = subprocess.Popen(cmd, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None)
        Server._live.append(self)
        deadline = time.monotonic() + ready_timeout
        pattern = re.compile(r"listening on http://([^:\s]+|\[[^\]]+\]):(\d+)")
        while time.monotonic() < deadline:
            text = self.log_text()
            match = pattern.search(text)
            if match:
                self.host = match.group(1).strip("[]")
                self.port = int(match.group(2))
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: s1serve exited with {self.proc.returncode} before listening:\n"
                                   + text[-2000:])
            time.sleep(0.02)
        else:
            raise RuntimeError(f"{self.name}: no 'listening on' line within {ready_timeout} s:\n" + self.log_text()[-2000:])
        if wait_health:
            self.wait_settled(deadline)
        return self

    def wait_settled(self, deadline):
        """Waits until every model reports ready or failed (mock-broken never becomes ready)."""
        last = None
        while time.monotonic() < deadline:
            try:
                response = request(self, "GET", "/health", timeout=2.0)
                last = response
                if response.status == 200:
                    return
                body = response.json()
                models = body.get("models", {}) if isinstance(body, dict) else {}
                if models and all(m.get("state") in ("ready", "failed") for m in models.values()
                                  if m.get("backend") == "local"):
                    return
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: s1serve exited with {self.proc.returncode}:\n" + self.log_text()[-2000:])
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: /health did not settle; last: {last and last.status} {last and last.body[:300]!r}")

    def log_text(self):
        try:
            with open(self.log.name, "r", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    def signal(self, signum):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signum)

    def wait(self, timeout):
        return self.proc.wait(timeout=timeout)

    def stop(self, grace=5.0):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except ProcessLookupError:
                pass
        if self in Server._live:
            Server._live.remove(self)
        return self.proc.returncode

    def cleanup_log(self):
        try:
            os.unlink(self.log.name)
        except OSError:
            pass

    def __enter__(self):
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc):
        self.stop()

    @classmethod
    def stop_all(cls):
        for server in list(cls._live):
            try:
                server.stop(grace=3.0)
            except Exception:
                if server.proc and server.proc.poll() is None:
                    server.proc.kill()


def install_signal_handlers():
    """SIGTERM/SIGHUP to the runner become SystemExit so finally blocks stop the servers."""

    def handler(signum, _frame):
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(signum, handler)
        except (ValueError, OSError):
            pass


# --------------------------------------------------------------------------------------------------
# Raw HTTP/1.1 client


class Response:
    def __init__(self):
        self.status = None
        self.reason = ""
        self.headers = []  # list of (name, value) in received order
        self.body = b""
        self.elapsed = 0.0
        self.closed = False  # the server closed the connection after this response
        self.raw_head = b""

    def header(self, name):
        values = self.header_all(name)
        return values[0] if values else None

    def header_all(self, name):
        lower = name.lower()
        return [v for k, v in self.headers if k.lower() == lower]

    def json(self):
        return loads_ordered(self.body)

    def __repr__(self):
        return f"<Response {self.status} {self.body[:200]!r}>"


def loads_ordered(data):
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    return json.loads(data, object_pairs_hook=OrderedDict)


class ProtocolError(Exception):
    pass


class Connection:
    """A single HTTP/1.1 connection with keep-alive, raw request bytes and stalls."""

    def __init__(self, server_or_host, port=None, timeout=30.0):
        if port is None:
            host, port = server_or_host.host, server_or_host.port
        else:
            host = server_or_host
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.timeout = timeout

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_all(self, data):
        self.sock.sendall(data)

    def send_body_watching(self, data, piece=65536):
        """Sends data in pieces, stopping early if the server has already answered (413, 401 ...).

        Returns True when everything was sent."""
        offset = 0
        while offset < len(data):
            readable, _, _ = select.select([self.sock], [], [], 0)
            if readable:
                return False
            try:
                sent = self.sock.send(data[offset:offset + piece])
            except (BrokenPipeError, ConnectionResetError):
                return False
            offset += sent
        return True

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("response timed out")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def read_response(self, method="GET", timeout=None):
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        response = Response()
        while True:
            while b"\r\n\r\n" not in self.buffer:
                if not self._fill(deadline):
                    raise ProtocolError("connection closed before a complete response head"
                                        + (f" (got {self.buffer[:100]!r})" if self.buffer else ""))
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            status_line = lines[0].split(" ", 2)
            if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
                raise ProtocolError(f"bad status line {lines[0]!r}")
            response.status = int(status_line[1])
            response.reason = status_line[2] if len(status_line) > 2 else ""
            response.headers = []
            for line in lines[1:]:
                if ":" not in line:
                    raise ProtocolError(f"bad header line {line!r}")
                name, value = line.split(":", 1)
                response.headers.append((name.strip(), value.strip()))
            response.raw_head = head
            if response.status >= 200 or response.status == 101:
                break  # skip 1xx interim responses (100 Continue)
        connection_header = ",".join(response.header_all("Connection")).lower()
        response.closed = "close" in connection_header
        if method == "HEAD" or response.status in (204, 304):
            return response
        te = ",".join(response.header_all("Transfer-Encoding")).lower()
        if "chunked" in te:
            body = b""
            while True:
                while b"\r\n" not in self.buffer:
                    if not self._fill(deadline):
                        raise ProtocolError("closed inside chunked body")
                size_line, self.buffer = self.buffer.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    while b"\r\n" not in self.buffer:
                        if not self._fill(deadline):
                            break
                    # trailers are not expected; consume the final CRLF
                    if self.buffer.startswith(b"\r\n"):
                        self.buffer = self.buffer[2:]
                    break
                while len(self.buffer) < size + 2:
                    if not self._fill(deadline):
                        raise ProtocolError("closed inside chunk")
                body += self.buffer[:size]
                self.buffer = self.buffer[size + 2:]
            response.body = body
        elif response.header("Content-Length") is not None:
            length = int(response.header("Content-Length"))
            while len(self.buffer) < length:
                if not self._fill(deadline):
                    raise ProtocolError(f"closed after {len(self.buffer)} of {length} body bytes")
            response.body, self.buffer = self.buffer[:length], self.buffer[length:]
        else:
            while self._fill(deadline):
                pass
            response.body, self.buffer = self.buffer, b""
            response.closed = True
        return response

    def at_eof(self, wait=0.5):
        """True when the server has closed the connection (EOF or reset) within `wait` seconds and
        sent no further bytes."""
        if self.buffer:
            return False
        try:
            self.sock.settimeout(wait)
            data = self.sock.recv(1)
            return data == b""
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True


def build_request(method, path, headers, body, host_header=None, chunked=False, content_length=None):
    """Builds the head bytes and body bytes of a request. headers: list of (name, value)."""
    lines = [f"{method} {path} HTTP/1.1"]
    names = {name.lower() for name, _ in headers}
    if "host" not in names:
        lines.append(f"Host: {host_header or '127.0.0.1'}")
    lines.extend(f"{name}: {value}" for name, value in headers)
    if chunked:
        if "transfer-encoding" not in names:
            lines.append("Transfer-Encoding: chunked")
    elif content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    elif body is not None and "content-length" not in names:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    return head


def chunk_encode(body, size=65536):
    out = bytearray()
    for offset in range(0, len(body), size):
        piece = body[offset:offset + size]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    out += b"0\r\n\r\n"
    return bytes(out)


def request(server, method, path, headers=None, body=None, timeout=30.0, chunked=False, connection=None,
            json_body=None):
    """One request; a fresh connection (closed afterwards) unless `connection` is given."""
    headers = list((headers or {}).items()) if isinstance(headers, dict) else list(headers or [])
    if json_body is not None:
        body = json.dumps(json_body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", "application/json"))
    if isinstance(body, str):
        body = body.encode("utf-8")
    own = connection is None
    conn = connection or Connection(server, timeout=timeout)
    try:
        start = time.monotonic()
        head = build_request(method, path, headers, body, chunked=chunked)
        payload = chunk_encode(body) if (chunked and body is not None) else (body or b"")
        conn.send_all(head)
        if payload:
            conn.send_body_watching(payload)
        response = conn.read_response(method=method, timeout=timeout)
        response.elapsed = time.monotonic() - start
        return response
    finally:
        if own:
            conn.close()


# --------------------------------------------------------------------------------------------------
# Invariants (§8.4 and the general response rules of §1, §3, §6.3)


def _is_float(value):
    return isinstance(value, float)


def _check_prob(value, where, problems):
    if not _is_float(value):
        problems.append(f"{where}: {value!r} is not written as a float (needs '.' or 'e')")
        return False
    if math.isnan(value) or value < 0.0 or value > 1.0:
        problems.append(f"{where}: {value!r} outside [0, 1]")
        return False
    if value == 0.0 and math.copysign(1.0, value) < 0:
        problems.append(f"{where}: negative zero")
    return True


def raw_float_tokens(body_bytes):
    """Every number literal in the raw body with whether it is a float. Parses with hooks that see
    the literal text, so '1' vs '1.0' is visible."""
    tokens = []

    def on_float(text):
        tokens.append(text)
        return float(text)

    json.loads(body_bytes.decode("utf-8"), parse_float=on_float, object_pairs_hook=OrderedDict)
    return tokens


def check_common_headers(response, problems, sent_request_id=None, json_expected=True):
    rid = response.header_all("x-request-id")
    if len(rid) != 1:
        problems.append(f"x-request-id: expected exactly one, got {rid!r}")
    else:
        if sent_request_id is not None:
            if REQUEST_ID_OK.match(sent_request_id):
                if rid[0] != sent_request_id:
                    problems.append(f"x-request-id {rid[0]!r} should echo {sent_request_id!r}")
            elif not HEX32.match(rid[0]):
                problems.append(f"x-request-id {rid[0]!r} should be 32 fresh lowercase hex digits")
        elif not HEX32.match(rid[0]):
            problems.append(f"x-request-id {rid[0]!r} is not 32 lowercase hex digits")
    if json_expected and response.body:
        content_type = response.header("Content-Type") or ""
        if content_type.split(";")[0].strip().lower() != "application/json":
            problems.append(f"Content-Type {content_type!r}, expected application/json")


def check_server_timing(response, problems):
    value = ", ".join(response.header_all("Server-Timing"))
    if not value:
        problems.append("Server-Timing missing")
        return
    names = []
    for entry in value.split(","):
        match = SERVER_TIMING_ENTRY.match(entry)
        if not match:
            problems.append(f"Server-Timing entry {entry.strip()!r} not of the form name;dur=<ms, <=3 decimals>")
            continue
        names.append(match.group(1))
    if names[:2] != ["queue", "infer"]:
        problems.append(f"Server-Timing starts with {names[:2]}, expected queue then infer")


def check_systemone_200(request_json, response, problems):
    """§8.4 for POST /v1/systemone."""
    try:
        body = response.json()
    except ValueError as error:
        problems.append(f"200 body is not JSON: {error}")
        return
    for token in raw_float_tokens(response.body):
        if token.startswith("-0") and float(token) == 0.0:
            problems.append(f"raw number {token} is negative zero")
    if list(body.keys()) != ["model", "answers", "usage"]:
        problems.append(f"top-level members {list(body.keys())}, expected [model, answers, usage]")
        return
    if not isinstance(body["model"], str):
        problems.append("model is not a string")
    usage = body["usage"]
    members = ["input_tokens", "output_tokens"]
    # A reused cached prefix adds cached_tokens after output_tokens (contract §11).
    if isinstance(usage, dict) and "cached_tokens" in usage:
        members.append("cached_tokens")
        cached = usage["cached_tokens"]
        if not (isinstance(cached, int) and not isinstance(cached, bool)
                and 1 <= cached <= usage.get("input_tokens", 0)):
            problems.append(f"cached_tokens {cached!r} is not an integer in [1, input_tokens]")
    if not isinstance(usage, dict) or list(usage.keys()) != members:
        problems.append(f"usage members {list(usage.keys()) if isinstance(usage, dict) else usage!r}")
    else:
        if not (isinstance(usage["input_tokens"], int) and not isinstance(usage["input_tokens"], bool)
                and usage["input_tokens"] >= 1):
            problems.append(f"input_tokens {usage['input_tokens']!r} is not an integer >= 1")
        if not (isinstance(usage["output_tokens"], int) and usage["output_tokens"] == 0
                and not isinstance(usage["output_tokens"], bool)):
            problems.append(f"output_tokens {usage['output_tokens']!r} is not the integer 0")
    answers = body["answers"]
    questions = request_json.get("questions") if isinstance(request_json, dict) else None
    if not isinstance(answers, dict):
        problems.append("answers is not an object")
        return
    if not isinstance(questions, dict):
        problems.append("cannot check answers: request questions unknown")
        return
    if list(answers.keys()) != list(questions.keys()):
        problems.append(f"answer keys {list(answers.keys())[:8]}... not the question keys in request order")
        return
    for key, question in questions.items():
        check_answer(key, question, answers[key], problems)
    check_server_timing(response, problems)


def check_answer(key, question, answer, problems):
    where = f"answers[{key!r}]"
    qtype = question.get("type")
    if not isinstance(answer, dict):
        problems.append(f"{where} is not an object")
        return
    if answer.get("type") != qtype:
        problems.append(f"{where}.type {answer.get('type')!r} != {qtype!r}")
        return
    if qtype == "noul":
        if list(answer.keys()) != ["type", "noul"]:
            problems.append(f"{where} members {list(answer.keys())}, expected [type, noul]")
            return
        _check_prob(answer["noul"], f"{where}.noul", problems)
    elif qtype == "choice":
        if list(answer.keys()) != ["type", "choice", "confidence", "probabilities"]:
            problems.append(f"{where} members {list(answer.keys())}, expected [type, choice, confidence, probabilities]")
            return
        probs = answer["probabilities"]
        options = list(question["criteria"].keys())
        if not isinstance(probs, dict) or list(probs.keys()) != options:
            problems.append(f"{where}.probabilities keys are not the options in criteria order")
            return
        if not all(_check_prob(p, f"{where}.probabilities[{name!r}]", problems) for name, p in probs.items()):
            return
        total = sum(probs.values())
        if abs(total - 1.0) > 1e-6:
            problems.append(f"{where}: probabilities sum to {total!r}")
        best = max(probs.values())
        first = next(name for name, p in probs.items() if p == best)
        if answer["choice"] != first:
            problems.append(f"{where}.choice {answer['choice']!r} is not the first argmax {first!r}")
        _check_prob(answer["confidence"], f"{where}.confidence", problems)
    elif qtype == "score":
        if list(answer.keys()) != ["type", "score", "confidence", "legend", "probabilities"]:
            problems.append(f"{where} members {list(answer.keys())}, expected [type, score, confidence, legend, probabilities]")
            return
        levels = question["criteria"]
        n = len(levels)
        expected_keys = [str(i) for i in range(n)]
        probs, legend = answer["probabilities"], answer["legend"]
        if not isinstance(probs, dict) or list(probs.keys()) != expected_keys:
            problems.append(f"{where}.probabilities keys {list(probs.keys()) if isinstance(probs, dict) else probs!r}")
            return
        if not isinstance(legend, dict) or list(legend.keys()) != expected_keys:
            problems.append(f"{where}.legend keys are not 0..{n - 1}")
        else:
            for i, level in enumerate(levels):
                difference = compare_exact(legend_form(level), legend[str(i)], f"{where}.legend[{i}]", tolerance=0.0)
                if difference:
                    problems.append(f"legend does not echo the level: {difference}")
        if not all(_check_prob(p, f"{where}.probabilities[{i}]", problems) for i, p in probs.items()):
            return
        total = sum(probs.values())
        if abs(total - 1.0) > 1e-6:
            problems.append(f"{where}: probabilities sum to {total!r}")
        score = answer["score"]
        if not _is_float(score):
            problems.append(f"{where}.score {score!r} not written as a float")
            return
        expected = sum(i * p for i, p in enumerate(probs.values()))
        if abs(score - expected) > 1e-9:
            problems.append(f"{where}.score {score!r} != sum(i*p) = {expected!r}")
        if score < 0 or score > n - 1:
            problems.append(f"{where}.score {score!r} outside [0, {n - 1}]")
        _check_prob(answer["confidence"], f"{where}.confidence", problems)
    else:
        problems.append(f"{where}: unexpected question type {qtype!r}")


def legend_form(value):
    """A level as the legend echoes it (§3.1): integers that fit 64 bits stay integers, others become
    floats."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if -(2 ** 63) <= value < 2 ** 64 else float(value)
    if isinstance(value, dict):
        return OrderedDict((k, legend_form(v)) for k, v in value.items())
    return [legend_form(v) for v in value]


def check_decisions_200(request_json, response, problems):
    """§6.3 shape plus the §8.4 numeric invariants, for POST /v1/decisions."""
    try:
        body = response.json()
    except ValueError as error:
        problems.append(f"200 body is not JSON: {error}")
        return
    if list(body.keys()) != ["model", "answers", "usage"]:
        problems.append(f"top-level members {list(body.keys())}, expected [model, answers, usage]")
        return
    usage = body["usage"]
    expected_usage = ["input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"]
    if not isinstance(usage, dict) or list(usage.keys()) != expected_usage:
        problems.append(f"usage members {list(usage.keys()) if isinstance(usage, dict) else usage!r}, expected {expected_usage}")
    else:
        tokens = usage["input_tokens"]
        if not (isinstance(tokens, int) and tokens >= 1):
            problems.append(f"input_tokens {tokens!r} not an integer >= 1")
        if usage["total_tokens"] != tokens:
            problems.append("total_tokens != input_tokens")
        if usage["output_tokens"] != 0:
            problems.append("output_tokens != 0")
        details = usage["input_tokens_details"]
        if not isinstance(details, dict) or list(details.keys()) != ["cached_tokens", "cache_write_tokens"]:
            problems.append(f"input_tokens_details {details!r}")
        elif not (0 <= details["cached_tokens"] <= tokens) or details["cache_write_tokens"] != 0:
            problems.append(f"input_tokens_details values {details!r}")
        if usage["output_tokens_details"] != {"reasoning_tokens": 0}:
            problems.append(f"output_tokens_details {usage['output_tokens_details']!r}")
    questions = request_json.get("questions", []) if isinstance(request_json, dict) else []
    answers = body["answers"]
    if not isinstance(answers, list) or len(answers) != len(questions):
        problems.append("answers is not a list with one entry per question")
        return
    for index, (question, answer) in enumerate(zip(questions, answers)):
        where = f"answers[{index}]"
        qtype = question.get("type")
        if answer.get("type") != qtype:
            problems.append(f"{where}.type {answer.get('type')!r} != {qtype!r}")
            continue
        if answer.get("name", "<absent>") != question.get("name"):
            problems.append(f"{where}.name {answer.get('name', '<absent>')!r} != {question.get('name')!r}")
        if qtype == "predicate":
            if list(answer.keys()) != ["type", "name", "probability"]:
                problems.append(f"{where} members {list(answer.keys())}")
                continue
            _check_prob(answer["probability"], f"{where}.probability", problems)
            continue
        expected_members = (["type", "name", "choice", "probabilities", "confidence"] if qtype == "choice"
                            else ["type", "name", "score", "probabilities", "confidence"])
        if list(answer.keys()) != expected_members:
            problems.append(f"{where} members {list(answer.keys())}, expected {expected_members}")
            continue
        entries = answer["probabilities"]
        ps = [entry.get("probability") for entry in entries]
        if not all(_check_prob(p, f"{where}.probabilities[{i}]", problems) for i, p in enumerate(ps)):
            continue
        if abs(sum(ps) - 1.0) > 1e-6:
            problems.append(f"{where}: probabilities sum to {sum(ps)!r}")
        _check_prob(answer["confidence"], f"{where}.confidence", problems)
        if qtype == "choice":
            values = [c["value"] for c in question["choices"]]
            got = [entry.get("value") for entry in entries]
            if got != values or any(type(a) is not type(b) for a, b in zip(got, values)):
                problems.append(f"{where} probability values {got!r} != choices {values!r}")
            best = max(ps)
            first = values[ps.index(best)]
            if answer["choice"] != first or type(answer["choice"]) is not type(first):
                problems.append(f"{where}.choice {answer['choice']!r} is not the first argmax {first!r}")
            for entry in entries:
                if list(entry.keys()) != ["value", "probability"]:
                    problems.append(f"{where} probability entry members {list(entry.keys())}")
                    break
        else:
            for i, entry in enumerate(entries):
                if list(entry.keys()) != ["value", "label", "probability"] or entry["value"] != i:
                    problems.append(f"{where} level entry {i}: {dict(entry)!r}")
                    break
            expected = sum(i * p for i, p in enumerate(ps))
            if abs(answer["score"] - expected) > 1e-9 or not _is_float(answer["score"]):
                problems.append(f"{where}.score {answer['score']!r} != {expected!r}")
    check_server_timing(response, problems)


# --------------------------------------------------------------------------------------------------
# Comparison helpers


def compare_exact(expected, actual, where="body", tolerance=1e-9):
    """Order-sensitive, type-strict comparison with matcher objects in `expected`:
    {"$ge": x}, {"$le": x}, {"$approx": x, "tol": t}, {"$type": "int|float|string|..."}, {"$any": true},
    {"$regex": "..."}. Floats compare within `tolerance`; 1 and 1.0 are different.
    Returns an error string or None."""
    if isinstance(expected, dict) and expected and all(k.startswith("$") or k == "tol" for k in expected):
        return _match(expected, actual, where)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected an object, got {short(actual)}"
        if list(expected.keys()) != list(actual.keys()):
            return f"{where}: members {list(actual.keys())[:10]} != expected {list(expected.keys())[:10]}"
        for key in expected:
            error = compare_exact(expected[key], actual[key], f"{where}.{key}", tolerance)
            if error:
                return error
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where}: expected an array, got {short(actual)}"
        if len(expected) != len(actual):
            return f"{where}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            error = compare_exact(e, a, f"{where}[{i}]", tolerance)
            if error:
                return error
        return None
    if type(expected) is not type(actual):
        return f"{where}: {short(actual)} ({type(actual).__name__}) != expected {short(expected)} ({type(expected).__name__})"
    if isinstance(expected, float):
        if abs(expected - actual) > tolerance:
            return f"{where}: {actual!r} != {expected!r} (tolerance {tolerance})"
        return None
    if expected != actual:
        return f"{where}: {short(actual)} != expected {short(expected)}"
    return None


def _match(matcher, actual, where):
    if "$any" in matcher:
        return None
    if "$type" in matcher:
        kinds = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
                 "float": lambda v: isinstance(v, float), "string": lambda v: isinstance(v, str),
                 "bool": lambda v: isinstance(v, bool), "null": lambda v: v is None,
                 "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                 "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not kinds[matcher["$type"]](actual):
            return f"{where}: {short(actual)} is not of type {matcher['$type']}"
    if "$ge" in matcher:
        if not isinstance(actual, (int, float)) or isinstance(actual, bool) or actual < matcher["$ge"]:
            return f"{where}: {short(actual)} is not >= {matcher['$ge']}"
    if "$le" in matcher:
        if not isinstance(actual, (int, float)) or isinstance(actual, bool) or actual > matcher["$le"]:
            return f"{where}: {short(actual)} is not <= {matcher['$le']}"
    if "$approx" in matcher:
        tol = matcher.get("tol", 1e-9)
        if not isinstance(actual, (int, float)) or isinstance(actual, bool) or abs(actual - matcher["$approx"]) > tol:
            return f"{where}: {short(actual)} is not within {tol} of {matcher['$approx']!r}"
    if "$regex" in matcher:
        if not isinstance(actual, str) or not re.search(matcher["$regex"], actual):
            return f"{where}: {short(actual)} does not match /{matcher['$regex']}/"
    if "$len" in matcher:
        if not hasattr(actual, "__len__") or len(actual) != matcher["$len"]:
            return f"{where}: length of {short(actual)} != {matcher['$len']}"
    return None


def short(value, limit=120):
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def get_path(value, path):
    for step in path:
        if isinstance(value, dict):
            if step not in value:
                raise KeyError(step)
            value = value[step]
        elif isinstance(value, list):
            value = value[int(step)]
        else:
            raise KeyError(step)
    return value


# --------------------------------------------------------------------------------------------------
# Timed scenarios shared by the corpus and the e2e tests


SLOW_BODY = {"model": "mock-slow", "state": "Ticket: I was charged twice.",
             "questions": {"q": {"type": "noul", "instructions": "Refund?"}}}


def check_error_envelope(response, status, error_type, problems, where=""):
    if response.status != status:
        problems.append(f"{where}status {response.status}, expected {status}: {response.body[:200]!r}")
        return
    try:
        body = response.json()
    except ValueError:
        problems.append(f"{where}body is not JSON: {response.body[:200]!r}")
        return
    detail = body.get("detail") if isinstance(body, dict) else None
    if list(body.keys()) != ["detail"] or not isinstance(detail, dict) \
            or sorted(detail.keys()) != ["error_type", "message"]:
        problems.append(f"{where}body {short(body)} is not {{\"detail\":{{\"error_type\",\"message\"}}}}")
        return
    if detail["error_type"] != error_type:
        problems.append(f"{where}error_type {detail['error_type']!r}, expected {error_type!r}")
    if not isinstance(detail["message"], str):
        problems.append(f"{where}message is not a string")


def concurrent_requests(server, bodies, stagger=0.15, timeout=20.0, path="/v1/systemone", headers=None):
    """Sends each body on its own connection from its own thread, `stagger` seconds apart.
    Returns a list of (response or exception, seconds from that request's start)."""
    results = [None] * len(bodies)

    def worker(index, body):
        start = time.monotonic()
        try:
            response = request(server, "POST", path, headers=dict(headers or {}), json_body=body, timeout=timeout)
            results[index] = (response, time.monotonic() - start)
        except Exception as error:  # noqa: BLE001 - reported by the caller
            results[index] = (error, time.monotonic() - start)

    threads = []
    for index, body in enumerate(bodies):
        thread = threading.Thread(target=worker, args=(index, body), daemon=True)
        thread.start()
        threads.append(thread)
        time.sleep(stagger)
    for thread in threads:
        thread.join(timeout + 5)
    return results


def scenario_i57(server):
    """Config C: 3 concurrent mock-slow requests -> one 200 (~3 s), one 504 (~5 s), one 503 at once."""
    problems = []
    results = concurrent_requests(server, [SLOW_BODY] * 3, stagger=0.2)
    outcomes = []
    for index, (response, seconds) in enumerate(results):
        if isinstance(response, Exception):
            problems.append(f"request {index}: {type(response).__name__}: {response}")
            continue
        outcomes.append((response.status, seconds, response))
    statuses = sorted(status for status, _, _ in outcomes)
    if statuses != [200, 503, 504]:
        problems.append("statuses " + ", ".join(f"{s} after {t:.2f}s" for s, t, _ in outcomes)
                        + "; expected one each of 200, 503, 504")
        return problems
    for status, seconds, response in outcomes:
        check_common_headers(response, problems)
        if status == 200:
            if not 2.5 <= seconds <= 4.2:
                problems.append(f"200 after {seconds:.2f}s, expected ~3 s")
            check_systemone_200(SLOW_BODY, response, problems)
        elif status == 504:
            check_error_envelope(response, 504, "deadline_exceeded", problems, "504: ")
            if not 4.5 <= seconds <= 5.9:
                problems.append(f"504 after {seconds:.2f}s, expected ~5 s (the deadline)")
        else:
            check_error_envelope(response, 503, "overloaded", problems, "503: ")
            if seconds > 1.0:
                problems.append(f"503 after {seconds:.2f}s, expected at once")
            # §11.1: the ceiling of the seconds until the 3 s run ends; the 503 comes ~0.4 s into it.
            if response.header("Retry-After") not in ("2", "3"):
                problems.append(f"503 Retry-After {response.header('Retry-After')!r}, expected '3' (or '2')")
    return problems


def scenario_i58(server, deadline_s=5.0):
    """Config C: Content-Length 100, 50 bytes, stall -> 504 deadline_exceeded after ~5 s."""
    problems = []
    with Connection(server, timeout=deadline_s + 5) as conn:
        start = time.monotonic()
        head = build_request("POST", "/v1/systemone", [("Content-Type", "application/json")], None,
                             content_length=100)
        conn.send_all(head + b'{"model":"mock-slow","state":"' + b"x" * 20)
        try:
            response = conn.read_response("POST", timeout=deadline_s + 4)
        except (socket.timeout, ProtocolError, OSError) as error:
            return [f"no response: {type(error).__name__}: {error}"]
        seconds = time.monotonic() - start
    check_error_envelope(response, 504, "deadline_exceeded", problems)
    check_common_headers(response, problems)
    if not deadline_s - 0.5 <= seconds <= deadline_s + 1.5:
        problems.append(f"answered after {seconds:.2f}s, expected ~{deadline_s:.0f} s")
    return problems
