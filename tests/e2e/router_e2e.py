#!/usr/bin/env python3
"""Router e2e tests (contract §7, corpus config R): a real s1serve in front of a programmable stub
worker on loopback. Standard library only.

    python3 tests/e2e/router_e2e.py --binary build/release/s1serve
"""
import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import s1harness as h  # noqa: E402
from checklist import Checklist  # noqa: E402


class Stub:
    """A /v1/systemone worker whose next replies the test programs; it records every POST."""

    def __init__(self, port=0):
        self.lock = threading.Lock()
        self.requests = []
        self.health_polls = []  # when each GET /health came
        self.health = (200, 0.0)  # the status /health answers and the seconds it takes
        self.behaviour = {"status": 200, "content_type": "application/json", "body": b"{}"}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with stub.lock:
                    stub.health_polls.append(time.time())
                status, delay = stub.health
                time.sleep(delay)
                body = b'{"status":"ok"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with stub.lock:
                    stub.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
                    behaviour = dict(stub.behaviour)
                if behaviour.get("sleep"):
                    time.sleep(behaviour["sleep"])
                if behaviour.get("close"):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = behaviour["body"]
                try:
                    self.send_response(behaviour["status"])
                    self.send_header("Content-Type", behaviour["content_type"])
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    if behaviour.get("close_after"):
                        self.close_connection = True  # closed while the router keeps it pooled
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the router gave up on an oversize or late reply, as it should

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def program(self, **behaviour):
        with self.lock:
            self.behaviour = {"status": 200, "content_type": "application/json", "body": b"{}", **behaviour}
            self.requests = []

    def posts(self):
        with self.lock:
            return list(self.requests)


def start_router(binary, stub_port, workdir):
    keys = os.path.join(workdir, "keys.txt")
    with open(keys, "w") as f:
        f.write("k-test\n")
    stub = f"http://127.0.0.1:{stub_port}"
    config = {
        "port": 0, "api_keys_file": keys, "timeout_ms": 5000, "default_model": "mock-ramp",
        "models": [
            {"source": "mock:ramp"},
            {"name": "remote", "upstream": {"urls": [stub], "model": "stub-1", "credential_env": "ROUTER_E2E_UP_KEY"}},
            {"name": "remote-dead", "upstream": {"urls": ["http://127.0.0.1:1"]}},
            {"name": "remote-fo", "upstream": {"urls": ["http://127.0.0.1:1", stub], "model": "stub-1"}},
            {"name": "remote-pair", "upstream": {"urls": [stub, stub], "model": "stub-1"}},
            {"name": "remote-narrow", "upstream": {"urls": [stub], "model": "stub-1", "max_in_flight": 2}},
        ],
    }
    path = os.path.join(workdir, "router.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return h.Server(binary, ["--config", path], env={"ROUTER_E2E_UP_KEY": "up-key"}, name="router").start()


def post(port, body, model=None, key="k-test", path="/v1/systemone", timeout=30, raw=None, extra_headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    payload = raw if raw is not None else json.dumps(body if model is None else {**body, "model": model}).encode()
    headers = {"Content-Type": "application/json", **(extra_headers or {})}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    started = time.time()
    connection.request("POST", path, payload, headers)
    response = connection.getresponse()
    data = response.read()
    elapsed = time.time() - started
    connection.close()
    return response.status, response.getheader("Content-Type"), data, dict(response.getheaders()), elapsed


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SAMPLE = {"state": "Ticket: I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Refund?"}}}


def raw_request(body):
    payload = json.dumps(body).encode()
    return (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-test\r\n"
            b"Content-Type: application/json\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)


def read_replies(sock, count, timeout=10):
    """`count` replies framed by Content-Length from one kept-alive connection: (status, body) each."""
    sock.settimeout(timeout)
    data, replies = b"", []
    while len(replies) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].decode("latin-1")
            length = int(re.search(r"(?im)^content-length:\s*(\d+)", head).group(1))
            if len(data) >= end + 4 + length:
                replies.append((int(head.split()[1]), data[end + 4:end + 4 + length]))
                data = data[end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return replies


def refused_start(binary, args):
    """(exit status, stderr) of an s1serve start expected to fail; status None when it served instead."""
    try:
        run = subprocess.run([binary, "serve", *args], capture_output=True, text=True, timeout=10)
        return run.returncode, run.stderr + run.stdout
    except subprocess.TimeoutExpired as served:
        return None, (served.stderr or b"").decode()


def check_start_up_refusals(binary, workdir, check):
    """Upstream URLs with user-info or a query string stop the start-up, naming the URL, not the secret."""
    for url in ["http://user:s3cret@127.0.0.1:1", "http://127.0.0.1:1/v1?key=s3cret"]:
        for args in (["--upstream", "remote=" + url], ["--upstream", url]):
            status, output = refused_start(binary, ["--port", "0", *args])
            check(f"start-up refuses {args}", status == 2 and "127.0.0.1:1" in output and "s3cret" not in output,
                  (status, output))
    path = os.path.join(workdir, "credentials-in-url.json")
    with open(path, "w") as f:
        json.dump({"port": 0, "models": [{"name": "r", "upstream": {"urls": ["http://u:s3cret@127.0.0.1:1"]}}]}, f)
    status, output = refused_start(binary, ["--config", path])
    check("start-up refuses a configured URL with user-info", status == 2 and "user-info" in output
          and "s3cret" not in output, (status, output))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_polling_and_panic_routing(binary, workdir, check):
    """Contract §11.7: polled at start-up and again 1 s after a failure; a hung replica delays nobody's
    polls; with no healthy replica the router still tries them."""
    late_port = free_port()
    hung = socket.socket()  # accepts connections (the backlog does) and never answers
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    beside_hung = Stub()
    # Polled unhealthy, though it answers decisions: its failed polls end 0.5 s after they begin,
    # so it has failed more recently than a dead replica polled at the same moments.
    slow_unhealthy = Stub()
    slow_unhealthy.health = (503, 0.5)
    slow_unhealthy.program(body=b'{"slow":1}')
    dead = f"http://127.0.0.1:{free_port()}"
    config = {"port": 0, "timeout_ms": 5000, "models": [
        {"name": "ordered", "upstream": {"urls": [f"http://127.0.0.1:{slow_unhealthy.port}", dead],
                                         "health_interval_ms": 60000}},
        {"name": "late", "upstream": {"urls": [f"http://127.0.0.1:{late_port}"], "health_interval_ms": 60000}},
        {"name": "hung-pair", "upstream": {"urls": [f"http://127.0.0.1:{hung.getsockname()[1]}",
                                                    f"http://127.0.0.1:{beside_hung.port}"],
                                           "health_interval_ms": 200, "health_timeout_ms": 5000}}]}
    path = os.path.join(workdir, "polling.json")
    with open(path, "w") as f:
        json.dump(config, f)
    server = h.Server(binary, ["--config", path], name="polling").start()
    port = server.port
    started = time.time()
    try:
        time.sleep(0.3)  # the start-up poll of the late worker has failed
        status, _, data, _, _ = post(port, SAMPLE, "late", key=None)
        check("no replica reachable is 502 upstream_unavailable",
              status == 502 and json.loads(data)["detail"]["error_type"] == "upstream_unavailable", (status, data))
        late = Stub(late_port)
        late.program(body=b'{"late":1}')
        status, _, data, _, _ = post(port, SAMPLE, "late", key=None)
        check("panic routing: no replica healthy, the request is still tried", (status, data) == (200, b'{"late":1}'),
              (status, data))
        healthy_after = None
        while time.time() - started < 4 and healthy_after is None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            health = json.loads(connection.getresponse().read())
            connection.close()
            if health["models"]["late"]["replicas_healthy"] == 1:
                healthy_after = time.time() - started
            time.sleep(0.05)
        check("a failed start-up poll is retried after 1 s, not the 60 s interval",
              healthy_after is not None and healthy_after < 2.5, healthy_after)
        time.sleep(max(0.0, started + 2.5 - time.time()))  # both replicas' second polls have failed
        status, _, data, _, _ = post(port, SAMPLE, "ordered", key=None)
        check("panic routing tries the least recently failed replica first",
              (status, data) == (200, b'{"slow":1}') and re.search(
                  rf"upstream ordered: request \S+ could not connect to {dead} .*; trying http://127.0.0.1:{slow_unhealthy.port}",
                  server.log_text()), (status, data, server.log_text()[-1500:]))
        # Polled one after the other, the neighbour would wait out the hung replica's 5 s timeout.
        polls = len(beside_hung.health_polls)
        check("a hung replica does not delay its neighbour's polls (every 200 ms)", polls >= 5, polls)
        check("the late replica's recovery is logged", f"upstream late: replica http://127.0.0.1:{late_port} is healthy"
              in server.log_text(), server.log_text()[-2000:])
    finally:
        server.stop()
        hung.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    stub = Stub()
    check = Checklist()
    with tempfile.TemporaryDirectory() as workdir:
        router = start_router(args.binary, stub.port, workdir)
        port = router.port
        try:
            time.sleep(0.5)  # the first health poll marks 127.0.0.1:1 unhealthy

            stub.program(content_type="application/json; charset=utf-8", body=b'{"model":"stub-1" , "answers":{}}')
            status, content_type, data, headers, _ = post(port, SAMPLE, "remote", path="/v1/systemone?trace=1",
                                                          extra_headers={"traceparent": TRACEPARENT})
            seen = stub.posts()
            check("V32 relays status, content type and bytes",
                  (status, content_type, data) == (200, "application/json; charset=utf-8", b'{"model":"stub-1" , "answers":{}}'),
                  (status, content_type, data))
            check("V32 worker saw the pool credential, query, request id and its model name",
                  len(seen) == 1 and seen[0]["headers"].get("Authorization") == "Bearer up-key"
                  and seen[0]["path"] == "/v1/systemone?trace=1" and "x-request-id" in {k.lower() for k in seen[0]["headers"]}
                  and json.loads(seen[0]["body"])["model"] == "stub-1", seen)
            check("the W3C traceparent is forwarded to the worker",
                  len(seen) == 1 and {k.lower(): v for k, v in seen[0]["headers"].items()}.get("traceparent") == TRACEPARENT,
                  seen)
            check("client key never reaches the worker", all("k-test" not in json.dumps(r["headers"]) for r in seen), seen)
            check("only the model value changed",
                  seen and seen[0]["body"] == json.dumps({**SAMPLE, "model": "remote"}).encode().replace(b'"remote"', b'"stub-1"'),
                  seen and seen[0]["body"])

            stub.program(body=b'{"ok":1}')
            status, _, data, _, _ = post(port, SAMPLE, "remote-fo")
            check("V33 fails over from a dead replica", status == 200 and data == b'{"ok":1}' and len(stub.posts()) == 1,
                  (status, data, len(stub.posts())))
            outcomes = [post(port, SAMPLE, "remote-fo")[0] for _ in range(5)]
            check("one replica down: every request still succeeds", outcomes == [200] * 5, outcomes)

            stub.program(status=422, body=b'{"detail":[{"type":"missing","loc":["body","x"],"msg":"Field required"}]}')
            status, _, data, _, _ = post(port, SAMPLE, "remote")
            check("V34 worker errors are relayed byte for byte",
                  status == 422 and data == b'{"detail":[{"type":"missing","loc":["body","x"],"msg":"Field required"}]}',
                  (status, data))

            status, _, data, _, _ = post(port, SAMPLE, "remote-dead")
            check("I68 unreachable pool is 502 upstream_unavailable",
                  status == 502 and json.loads(data)["detail"]["error_type"] == "upstream_unavailable", (status, data))

            stub.program(sleep=10, body=b"{}")
            status, _, data, _, elapsed = post(port, SAMPLE, "remote")
            check("I69 slow worker is 504 at the deadline",
                  status == 504 and json.loads(data)["detail"]["error_type"] == "deadline_exceeded" and 4 <= elapsed < 7,
                  (status, data, elapsed))

            stub.program(body=b"x" * (17 * 1024 * 1024))
            status, _, data, _, _ = post(port, SAMPLE, "remote")
            check("I70 oversize worker reply is 502 upstream_bad_response",
                  status == 502 and json.loads(data)["detail"]["error_type"] == "upstream_bad_response", (status, data[:200]))

            stub.program(close=True)
            status, _, data, _, _ = post(port, SAMPLE, "remote-pair")
            check("I71 reply cut off after the request is 502 and never retried",
                  status == 502 and json.loads(data)["detail"]["error_type"] == "upstream_bad_response"
                  and len(stub.posts()) == 1, (status, data, len(stub.posts())))

            stub.program(body=b"{}")
            status, _, data, headers, _ = post(port, SAMPLE, "remote", key="wrong")
            check("I72 wrong client key is 401 and the worker sees nothing",
                  status == 401 and headers.get("WWW-Authenticate") == "Bearer" and not stub.posts(), (status, data))
            status, _, data, _, _ = post(port, None, raw=b'{"model":"remote","state":')
            check("I73 cut-off JSON is refused by the router",
                  status == 422 and json.loads(data)["detail"][0]["type"] == "json_invalid" and not stub.posts(), (status, data))

            worker_answer = {"model": "stub-1", "answers": {
                "0": {"type": "choice", "choice": "b", "confidence": 0.5, "probabilities": {"a": 0.25, "b": 0.75}},
                "1": {"type": "noul", "noul": 0.9}}, "usage": {"input_tokens": 12, "output_tokens": 0}}
            stub.program(body=json.dumps(worker_answer).encode())
            decisions = {"model": "remote", "input": "x", "questions": [
                {"type": "choice", "name": "c", "instructions": "", "choices": [{"value": "a"}, {"value": "b"}]},
                {"type": "predicate", "instructions": "p"}]}
            status, _, data, _, _ = post(port, decisions, path="/v1/decisions")
            body = json.loads(data) if status == 200 else {}
            check("decisions through a pool are mapped back",
                  status == 200 and body["answers"][0]["choice"] == "b" and body["answers"][1]["probability"] == 0.9
                  and body["usage"]["input_tokens"] == 12 and json.loads(stub.posts()[0]["body"])["model"] == "stub-1",
                  (status, data))

            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            health = json.loads(connection.getresponse().read())
            check("health lists upstream pools",
                  health["models"]["remote"]["backend"] == "upstream" and health["models"]["remote-dead"]["state"] == "unavailable"
                  and health["models"]["remote-fo"]["replicas_total"] == 2, health)
            connection.request("GET", "/v1/models", headers={"Authorization": "Bearer k-test"})
            models = json.loads(connection.getresponse().read())
            check("models lists upstream pools", [m["backend"] for m in models["models"] if "alias_of" not in m] == ["local"] + ["upstream"] * 5, models)
            connection.request("GET", "/metrics")
            metrics = connection.getresponse().read().decode()
            check("metrics count upstream outcomes", 's1serve_upstream_requests_total{model="remote"' in metrics
                  and "s1serve_upstream_replica_healthy" in metrics, metrics[-500:])
            check("metrics never show the pool credential", "up-key" not in metrics)
            text = router.log_text()
            check("upstream state changes and failed forwards are logged at info",
                  "upstream remote-dead: replica http://127.0.0.1:1 is unhealthy" in text
                  and re.search(r"info\].*upstream remote-dead: request \S+ could not connect to http://127.0.0.1:1 .*no replica left", text)
                  and re.search(r"upstream remote: request \S+ to http://127.0.0.1:\d+ passed its deadline", text)
                  and "upstream remote: replica http://127.0.0.1:" in text and "up-key" not in text, text[-3000:])

            stub.program(sleep=1, body=b'{"ok":1}')
            burst = []
            threads = [threading.Thread(target=lambda: burst.append(post(port, SAMPLE, "remote-narrow"))) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            statuses = sorted(result[0] for result in burst)
            overloaded = [result for result in burst if result[0] == 503]
            check("a burst beyond the pool's limit degrades with 503 overloaded",
                  statuses.count(200) == 2 and len(overloaded) == 6
                  and all(r[3].get("Retry-After") == "1" and json.loads(r[2])["detail"]["error_type"] == "overloaded"
                          for r in overloaded), statuses)
            stub.program(body=b'{"ok":1}')
            check("and recovers", post(port, SAMPLE, "remote-narrow")[0] == 200)

            status, _, data, _, _ = post(port, SAMPLE, "mock-ramp")
            check("local models are served beside pools", status == 200 and json.loads(data)["model"] == "mock-ramp", data)

            # One client connection kept alive across forwarded requests (the next request is read by
            # a receive started while the previous one is forwarded), then two pipelined in one write.
            stub.program(body=b'{"ok":2}')
            with socket.create_connection(("127.0.0.1", port)) as client:
                replies = []
                for _ in range(3):
                    client.sendall(raw_request({**SAMPLE, "model": "remote"}))
                    replies += read_replies(client, 1)
                client.sendall(raw_request({**SAMPLE, "model": "remote"}) + raw_request({**SAMPLE, "model": "remote"}))
                replies += read_replies(client, 2)
                client.sendall(raw_request({**SAMPLE, "model": "mock-ramp"}))
                replies += read_replies(client, 1)
            check("a kept-alive client connection carries forwarded, pipelined and local requests",
                  [r[0] for r in replies] == [200] * 6 and all(r[1] == b'{"ok":2}' for r in replies[:5])
                  and json.loads(replies[5][1])["model"] == "mock-ramp" and len(stub.posts()) == 5, replies)

            # A client that leaves while its request is forwarded: the router stays well.
            stub.program(body=b'{"ok":3}', sleep=0.3)
            with socket.create_connection(("127.0.0.1", port)) as client:
                client.sendall(raw_request({**SAMPLE, "model": "remote"}))
            time.sleep(0.5)
            stub.program(body=b'{"ok":3}')
            check("a client gone during forwarding leaves the router serving", post(port, SAMPLE, "remote")[0] == 200)

            # The worker closes each connection after its reply, while the router keeps it pooled: the
            # close is seen before the next request, which goes over a new connection and succeeds.
            stub.program(body=b'{"ok":4}', close_after=True)
            outcomes = []
            for _ in range(3):
                outcomes.append(post(port, SAMPLE, "remote")[:3:2])
                time.sleep(0.1)
            check("connections the worker closed while pooled are replaced, never a 502",
                  outcomes == [(200, b'{"ok":4}')] * 3 and len(stub.posts()) == 3, outcomes)
        finally:
            router.stop()
        check_start_up_refusals(args.binary, workdir, check)
        check_polling_and_panic_routing(args.binary, workdir, check)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
