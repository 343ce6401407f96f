#!/usr/bin/env python3
"""Three s1serve replicas behind nginx on loopback, with docs/deployment.md's nginx settings: one
replica is killed (SIGKILL) under load and no request is lost beyond those in flight on it (with
the documented retry of pure decision requests, none at all); a second is stopped with SIGTERM and
drains. Needs nginx (scripts/install-deps installs nginx-light). Standard library only.

    python3 tests/e2e/nginx_replicas_e2e.py --binary build/release/s1serve
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import s1harness as h  # noqa: E402
from checklist import Checklist  # noqa: E402

SAMPLE = json.dumps({"model": "mock-ramp", "state": "Ticket: I was charged twice.",
                     "questions": {"q": {"type": "noul", "instructions": "Refund?"}}}).encode()

# The upstream block and proxy settings docs/deployment.md recommends.
NGINX_PROXY = """\
upstream s1serve {
    least_conn;
%(servers)s
    keepalive 32;
}
server {
    listen 127.0.0.1:%(port)d;
    location / {
        proxy_pass http://s1serve;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_next_upstream error timeout non_idempotent;
        proxy_next_upstream_tries 3;
        proxy_connect_timeout 2s;
        proxy_read_timeout 65s;
    }
}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_nginx(workdir, replica_ports):
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        raise RuntimeError("nginx is not installed (scripts/install-deps installs nginx-light)")
    port = free_port()
    servers = "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in replica_ports)
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        # As root, nginx's workers would switch to nobody, who cannot write the test's directory.
        f.write(("user root;\n" if os.geteuid() == 0 else "") + f"""\
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log info;
events {{ worker_connections 256; }}
http {{
    log_format upstreams "$msec $status $upstream_addr";
    access_log {workdir}/access.log upstreams;
    client_body_temp_path {workdir}/body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
{NGINX_PROXY % {"servers": servers, "port": port}}
}}
""")
    process = subprocess.Popen([nginx, "-p", workdir, "-c", conf, "-g", "daemon off;"], stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            connection.getresponse().read()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("nginx did not start: " + process.stderr.read().decode())


class Load:
    """`clients` threads posting decisions through nginx over kept-alive connections; each outcome
    is recorded with the time its request was sent."""

    def __init__(self, port, clients):
        self.port = port
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.outcomes = []  # (sent, answered, status or exception name)
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(clients)]
        for thread in self.threads:
            thread.start()

    def run(self):
        connection = None
        while not self.stop.is_set():
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            sent = time.time()
            try:
                connection.request("POST", "/v1/systemone", SAMPLE, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                outcome = response.status
            except (OSError, http.client.HTTPException) as error:
                outcome = type(error).__name__
                connection.close()
                connection = None
            with self.lock:
                self.outcomes.append((sent, time.time(), outcome))

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()
        return self.outcomes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    check = Checklist()
    replicas = [h.Server(args.binary, ["--model", "mock:ramp", "--port", "0", "--drain-ms", "5000"],
                         name=f"replica{i}").start() for i in range(3)]
    nginx = None
    with tempfile.TemporaryDirectory() as workdir:
        try:
            nginx, port = start_nginx(workdir, [replica.port for replica in replicas])
            load = Load(port, clients=6)
            time.sleep(1.0)
            killed_at = time.time()
            replicas[0].signal(signal.SIGKILL)
            time.sleep(1.0)
            terminated_at = time.time()
            replicas[1].signal(signal.SIGTERM)
            time.sleep(1.0)
            outcomes = load.finish()

            failed = [o for o in outcomes if o[2] != 200]
            before = [o for o in outcomes if o[1] < killed_at]
            after = [o for o in outcomes if o[0] > terminated_at + 0.2]
            print(f"{len(outcomes)} requests, {len(before)} before the kill, {len(failed)} failed: "
                  f"{sorted(set(str(o[2]) for o in failed))}", flush=True)
            with open(os.path.join(workdir, "access.log")) as f:
                log = [line.split(" ", 2) for line in f.read().splitlines()]
            served_before = {address.strip() for at, _, addresses in log if float(at) < killed_at
                             for address in addresses.split(",")}
            expected = {f"127.0.0.1:{replica.port}" for replica in replicas}
            check("load ran through all three replicas before the kill", len(before) > 50 and served_before == expected,
                  (len(before), served_before))
            killed, stopped = (f"127.0.0.1:{replicas[i].port}" for i in (0, 1))
            retried = [addresses for at, _, addresses in log if float(at) >= killed_at and "," in addresses]
            check("what failed on the killed and the stopped replica was retried on another",
                  any(addresses.startswith(killed) for addresses in retried)
                  and all(addresses.split(",")[0] in (killed, stopped) for addresses in retried), retried[:5])
            # The 6 clients' requests are the most that can be in flight anywhere at the kill.
            in_flight_at_kill = [o for o in failed if o[0] <= killed_at <= o[1]]
            check("no request lost beyond those in flight on the killed replica",
                  len(failed) == len(in_flight_at_kill) and len(failed) <= 6, failed)
            check("no request lost at all (pure decisions are retried on another replica)", not failed, failed)
            check("the last replica serves everything after the SIGKILL and the SIGTERM",
                  len(after) > 20 and all(o[2] == 200 for o in after), len(after))
            status = replicas[1].wait(timeout=10)
            check("the SIGTERMed replica drained and exited 0", status == 0, status)
        finally:
            if nginx is not None:
                nginx.terminate()
                nginx.wait(timeout=10)
            for replica in replicas:
                replica.stop()
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
