#!/usr/bin/env python3
"""Runs the s1serve conformance corpus (reference/system-one-api.md §8) against the real binary.

Usage: run_conformance.py --binary path/to/s1serve [--filter REGEX] [--verbose] [--keep-logs]

Each case file in cases/ is a JSON array of cases. A case:
  id, title, config ("A", "B", "C" or "D"; default "A"), method (default POST), path (default /v1/systemone),
  headers (merged onto the defaults: Authorization: Bearer k-test, and Content-Type: application/json
  on POST; a null value removes a default),
  one of: body (a JSON value; generator objects are expanded, see expand()), body_raw (a list of parts:
  a string sent as UTF-8, {"hex": ".."}, {"base64": ".."}, {"repeat": "a", "count": N}, {"json": value}),
  transfer ("chunked" to send the body chunked),
  kind (a scripted case: "tokens_shared_prefix", "i57", "i58"), and expect:
    status, body (exact, order-sensitive, type-strict; matchers {"$ge": 1}, {"$approx": x, "tol": t},
    {"$type": "int"}, {"$regex": ".."}, {"$len": n}, {"$any": true}), json (a list of {"path": [...],
    then "equals": v or "matches": matcher}), detail0 {type, loc} (422), error {error_type, message?}
    (the System One envelope), openai_error {type, code, param, message?}, headers (exact values),
    headers_regex, headers_absent, raw_contains (substrings of the raw body), no_body,
    content_type_prefix, same_body_as (raw bytes identical to an earlier case's), request_id (the
    x-request-id expected: "echo" or "fresh").
Every response is checked for x-request-id and, for JSON bodies, Content-Type; every 200 from the POST
routes is checked against §8.4.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import time
import traceback
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import s1harness as h  # noqa: E402

DEFAULT_AUTH = "Bearer k-test"
CONFIG_FILES = {"A": "config-a.json", "B": "config-b.json", "C": "config-c.json", "D": "config-d.json"}


# --------------------------------------------------------------------------------------------------
# Case loading and body generation


MACROS = {}


def expand(value):
    """Expands generator objects inside a JSON body value:
    {"$use": "NAME", "merge": {...}, "drop": [...]} -> the file's macro NAME (members of merge replace
                                            or are appended, members in drop are removed)
    {"$B": x}                               -> {"model":"mock-ramp","state":"Ticket: I was charged twice.","questions":x}
    {"$repeat": "é", "count": 256}          -> a string of 256 'é'
    {"$object": {"count": n, "key": "o{i}", "value": v}}  -> an object with n members ({i} = 0..n-1)
    {"$array": {"count": n, "item": v}}     -> an array of n items ("{i}" in strings is replaced)
    {"$nest": depth, "leaf": v}             -> depth nested arrays around leaf
    {"$pairs": [[key, value], ...]}         -> an object whose keys may be generators too
    """
    if isinstance(value, dict):
        if "$use" in value:
            base = expand(json.loads(json.dumps(MACROS[value["$use"]]), object_pairs_hook=OrderedDict))
            for key, member in value.get("merge", {}).items():
                base[key] = expand(member)
            for key in value.get("drop", []):
                base.pop(key, None)
            return base
        if "$B" in value:
            return OrderedDict([("model", "mock-ramp"), ("state", "Ticket: I was charged twice."),
                                ("questions", expand(value["$B"]))])
        if "$pairs" in value:
            return OrderedDict((expand(k), expand(v)) for k, v in value["$pairs"])
        if "$repeat" in value:
            return value["$repeat"] * value["count"]
        if "$object" in value:
            spec = value["$object"]
            out = OrderedDict()
            for i in range(spec["count"]):
                out[spec["key"].replace("{i}", str(i))] = expand(substitute(spec.get("value"), i))
            return out
        if "$array" in value:
            spec = value["$array"]
            return [expand(substitute(spec["item"], i)) for i in range(spec["count"])]
        if "$nest" in value:
            inner = expand(value.get("leaf", "x"))
            for _ in range(value["$nest"]):
                inner = [inner]
            return inner
        return OrderedDict((k, expand(v)) for k, v in value.items())
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def substitute(value, i):
    if isinstance(value, str):
        return value.replace("{i}", str(i))
    if isinstance(value, dict):
        return OrderedDict((k.replace("{i}", str(i)), substitute(v, i)) for k, v in value.items())
    if isinstance(value, list):
        return [substitute(v, i) for v in value]
    return value


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def body_of(case):
    """Returns (body bytes or None, the request as JSON for the invariant checks or None)."""
    if "body" in case:
        value = expand(case["body"])
        return dumps(value), value
    if "body_raw" in case:
        out = bytearray()
        for part in case["body_raw"]:
            if isinstance(part, str):
                out += part.encode("utf-8")
            elif "hex" in part:
                out += bytes.fromhex(part["hex"])
            elif "base64" in part:
                out += base64.b64decode(part["base64"])
            elif "repeat" in part:
                out += (part["repeat"] * part["count"]).encode("utf-8")
            elif "json" in part:
                out += dumps(expand(part["json"]))
            else:
                raise ValueError(f"unknown body part {part!r}")
        try:
            parsed = h.loads_ordered(bytes(out))
        except ValueError:
            parsed = None
        return bytes(out), parsed
    return None, None


def load_cases(directory):
    cases = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            content = json.load(handle, object_pairs_hook=OrderedDict)
        if isinstance(content, dict):
            for macro, definition in content.get("macros", {}).items():
                if macro in MACROS and MACROS[macro] != definition:
                    raise SystemExit(f"{name}: macro {macro} redefined differently")
                MACROS[macro] = definition
            content = content["cases"]
        if True:
            for case in content:
                case.setdefault("config", "A")
                case["_file"] = name
                cases.append(case)
    ids = [case["id"] for case in cases]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise SystemExit(f"duplicate case ids: {sorted(duplicates)}")
    return cases


# --------------------------------------------------------------------------------------------------
# Running one case


def request_headers(case):
    method = case.get("method", "POST")
    headers = OrderedDict()
    headers["Authorization"] = DEFAULT_AUTH
    if method == "POST":
        headers["Content-Type"] = "application/json"
    for name, value in case.get("headers", {}).items():
        for existing in [k for k in headers if k.lower() == name.lower()]:
            del headers[existing]
        if value is not None:
            headers[name] = value
    return method, headers


def send_case(server, case):
    method, headers = request_headers(case)
    path = case.get("path", "/v1/systemone")
    body, request_json = body_of(case)
    chunked = case.get("transfer") == "chunked"
    response = h.request(server, method, path, headers=list(headers.items()), body=body, chunked=chunked,
                         timeout=case.get("timeout", 30.0))
    return response, request_json, headers


def check_case(case, response, request_json, headers, responses):
    problems = []
    expect = case.get("expect", {})
    method = case.get("method", "POST")
    path = case.get("path", "/v1/systemone")
    if "status" in expect and response.status != expect["status"]:
        problems.append(f"status {response.status}, expected {expect['status']}; body {response.body[:300]!r}")
        return problems

    body_json = None
    if response.body and method != "HEAD":
        content_type = (response.header("Content-Type") or "").lower()
        if content_type.startswith("application/json"):
            try:
                body_json = response.json()
            except ValueError as error:
                problems.append(f"body is not valid JSON: {error}: {response.body[:200]!r}")
                return problems

    # x-request-id and Content-Type on every response.
    sent_id = headers.get("x-request-id")
    h.check_common_headers(response, problems, sent_request_id=sent_id,
                           json_expected=not path.startswith("/metrics"))

    # §8.4 on every 200 of the POST routes.
    if response.status == 200 and method == "POST" and request_json is not None:
        if path.split("?")[0] == "/v1/systemone":
            h.check_systemone_200(request_json, response, problems)
        elif path.split("?")[0] == "/v1/decisions":
            h.check_decisions_200(request_json, response, problems)

    if "body" in expect:
        error = h.compare_exact(expect["body"], body_json)
        if error:
            problems.append(error)
    for check in expect.get("json", []):
        try:
            actual = h.get_path(body_json, check["path"])
        except (KeyError, IndexError, TypeError, ValueError):
            problems.append(f"path {check['path']} absent in {h.short(body_json)}")
            continue
        if "equals" in check:
            error = h.compare_exact(check["equals"], actual, "/".join(map(str, check["path"])))
        else:
            error = h.compare_exact(check["matches"], actual, "/".join(map(str, check["path"])))
        if error:
            problems.append(error)
    if "detail0" in expect:
        check_detail0(body_json, expect["detail0"], problems)
    if "error" in expect:
        h.check_error_envelope(response, expect.get("status", response.status), expect["error"]["error_type"], problems)
        if "message" in expect["error"] and isinstance(body_json, dict) and isinstance(body_json.get("detail"), dict):
            if body_json["detail"].get("message") != expect["error"]["message"]:
                problems.append(f"message {body_json['detail'].get('message')!r}, expected {expect['error']['message']!r}")
    if "openai_error" in expect:
        check_openai_error(body_json, expect["openai_error"], problems)
    for name, value in expect.get("headers", {}).items():
        got = response.header_all(name)
        if got != [value]:
            problems.append(f"header {name}: {got!r}, expected [{value!r}]")
    for name, pattern in expect.get("headers_regex", {}).items():
        got = response.header(name)
        if got is None or not re.search(pattern, got):
            problems.append(f"header {name}: {got!r} does not match /{pattern}/")
    for name in expect.get("headers_absent", []):
        if response.header(name) is not None:
            problems.append(f"header {name} present ({response.header(name)!r}), expected absent")
    for text in expect.get("raw_contains", []):
        if text.encode("utf-8") not in response.body:
            problems.append(f"raw body lacks {text!r}")
    if expect.get("no_body") and response.body:
        problems.append(f"body present: {response.body[:100]!r}")
    if "content_type_prefix" in expect:
        got = response.header("Content-Type") or ""
        if not got.lower().startswith(expect["content_type_prefix"].lower()):
            problems.append(f"Content-Type {got!r} does not start with {expect['content_type_prefix']!r}")
    if "same_body_as" in expect:
        other = responses.get(expect["same_body_as"])
        if other is None:
            problems.append(f"no response of {expect['same_body_as']} to compare with")
        elif other.body != response.body:
            problems.append(f"body differs from {expect['same_body_as']}: {response.body[:200]!r} vs {other.body[:200]!r}")
    if expect.get("request_id") == "fresh":
        rid = response.header("x-request-id") or ""
        if not h.HEX32.match(rid):
            problems.append(f"x-request-id {rid!r} is not a fresh 32-hex id")
    elif expect.get("request_id") == "echo":
        if response.header("x-request-id") != sent_id:
            problems.append(f"x-request-id {response.header('x-request-id')!r} does not echo {sent_id!r}")
    return problems


def check_detail0(body, expected, problems):
    if not isinstance(body, dict) or list(body.keys()) != ["detail"] or not isinstance(body["detail"], list) \
            or not body["detail"]:
        problems.append(f"422 body {h.short(body)} is not {{\"detail\":[...]}} with at least one entry")
        return
    for index, entry in enumerate(body["detail"]):
        if not isinstance(entry, dict) or sorted(entry.keys()) != ["loc", "msg", "type"]:
            problems.append(f"detail[{index}] members {list(entry.keys()) if isinstance(entry, dict) else entry!r}, "
                            "expected exactly type, loc, msg")
            return
        if not isinstance(entry["msg"], str) or not isinstance(entry["loc"], list) or entry["loc"][:1] != ["body"]:
            problems.append(f"detail[{index}] {h.short(entry)}: msg must be a string, loc start with 'body'")
    first = body["detail"][0]
    want_loc = ["body"] + [expand(step) for step in expected.get("loc", [])]
    if first["type"] != expected["type"] or first["loc"] != want_loc:
        problems.append(f"detail[0] type={first['type']!r} loc={first['loc']!r}, "
                        f"expected type={expected['type']!r} loc={want_loc!r}")
    if "msg" in expected and first["msg"] != expected["msg"]:
        problems.append(f"detail[0].msg {first['msg']!r}, expected {expected['msg']!r}")


def check_openai_error(body, expected, problems):
    if not isinstance(body, dict) or list(body.keys()) != ["error"] or not isinstance(body["error"], dict):
        problems.append(f"body {h.short(body)} is not {{\"error\":{{...}}}}")
        return
    error = body["error"]
    if sorted(error.keys()) != ["code", "message", "param", "type"]:
        problems.append(f"error members {list(error.keys())}, expected message, type, param, code")
        return
    if not isinstance(error["message"], str):
        problems.append("error.message is not a string")
    for key in ("type", "code", "param", "message"):
        if key in expected and error[key] != expected[key]:
            problems.append(f"error.{key} {error[key]!r}, expected {expected[key]!r}")


# Scripted cases -----------------------------------------------------------------------------------


def run_tokens_shared_prefix(server, case):
    """V24: the same 1000-character state with 1 question and with 2: the prefix counts once."""
    state = "Ticket: " + ("charged twice " * 100)
    state = state[:1000]
    question = {"type": "noul", "instructions": "Refund?"}
    counts = []
    problems = []
    for questions in ({"q": question}, {"q": question, "r": question}):
        body = OrderedDict([("model", "mock-ramp"), ("state", state), ("questions", questions)])
        headers = [("Authorization", DEFAULT_AUTH), ("Content-Type", "application/json")]
        response = h.request(server, "POST", "/v1/systemone", headers=headers, body=dumps(body))
        if response.status != 200:
            return [f"status {response.status}: {response.body[:200]!r}"]
        h.check_common_headers(response, problems)
        h.check_systemone_200(body, response, problems)
        counts.append(response.json()["usage"]["input_tokens"])
    one, two = counts
    if not two < 2 * one - 900:
        problems.append(f"input_tokens with 1 question {one}, with 2 {two}: not < 2*{one} - 900")
    return problems


def run_scripted(server, case):
    kind = case["kind"]
    if kind == "tokens_shared_prefix":
        return run_tokens_shared_prefix(server, case)
    if kind == "i57":
        return h.scenario_i57(server)
    if kind == "i58":
        return h.scenario_i58(server)
    raise ValueError(f"unknown kind {kind!r}")


# --------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, help="path to the s1serve binary")
    parser.add_argument("--cases", default=os.path.join(HERE, "cases"))
    parser.add_argument("--configs", default=os.path.join(HERE, "configs"))
    parser.add_argument("--filter", default=None, help="regular expression on case ids")
    parser.add_argument("--verbose", "-v", action="store_true", help="print response bodies of failures")
    parser.add_argument("--keep-logs", action="store_true", help="keep the server logs and print their paths")
    args = parser.parse_args()

    h.install_signal_handlers()
    cases = load_cases(args.cases)
    if args.filter:
        cases = [case for case in cases if re.search(args.filter, case["id"])]
    passed = failed = 0
    failures = []
    servers = {}
    responses = {}
    start = time.monotonic()
    try:
        for config in CONFIG_FILES:
            selected = [case for case in cases if case["config"] == config]
            if not selected:
                continue
            server = h.Server(os.path.abspath(args.binary), ["--config", CONFIG_FILES[config]],
                              cwd=args.configs, name=f"conf-{config}")
            servers[config] = server
            try:
                server.start()
            except Exception as error:  # noqa: BLE001
                for case in selected:
                    print(f"FAIL {case['id']}: config {config} did not start: {error}", flush=True)
                    failed += 1
                    failures.append(case["id"])
                continue
            for case in selected:
                label = f"{case['id']} [{config}] {case.get('title', '')}".rstrip()
                try:
                    if "kind" in case:
                        problems = run_scripted(server, case)
                    else:
                        response, request_json, headers = send_case(server, case)
                        responses[case["id"]] = response
                        problems = check_case(case, response, request_json, headers, responses)
                        if problems and args.verbose:
                            problems.append(f"response: {response.status} {response.headers} {response.body[:600]!r}")
                except Exception as error:  # noqa: BLE001 - a broken case must not stop the run
                    problems = [f"{type(error).__name__}: {error}"]
                    if args.verbose:
                        problems.append(traceback.format_exc())
                if server.proc.poll() is not None:
                    problems.append(f"the server exited with {server.proc.returncode}")
                if problems:
                    failed += 1
                    failures.append(case["id"])
                    print(f"FAIL {label}", flush=True)
                    for problem in problems:
                        print(f"     - {problem}", flush=True)
                else:
                    passed += 1
                    print(f"PASS {label}", flush=True)
                if server.proc.poll() is not None:
                    try:
                        server.stop()
                        server.start()
                    except Exception:  # noqa: BLE001
                        pass
            code = server.stop()
            if code not in (0, None):
                print(f"NOTE server for config {config} exited with {code} after SIGTERM", flush=True)
    finally:
        h.Server.stop_all()
        for server in servers.values():
            if args.keep_logs:
                print(f"log {server.name}: {server.log.name}")
            else:
                server.cleanup_log()
    print(f"# {time.monotonic() - start:.1f} s; failed: {' '.join(failures) if failures else 'none'}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not (passed + failed) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        h.Server.stop_all()
        print("interrupted", file=sys.stderr)
        sys.exit(130)
