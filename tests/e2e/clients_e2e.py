#!/usr/bin/env python3
"""End to end: s1serve driven by the real client packages (contract §11.1).

The clients are the PyPI releases pinned in tests/e2e/clients/requirements.txt, installed into a
virtual environment by scripts/install-test-clients (scripts/test runs it; nothing is fetched here,
so the test runs offline once installed). Run with any python3: it re-runs itself with the venv's
interpreter.

- typesafe-sdk, sync and async, with compression off and with zstd (the SDK's default when zstd is
  importable; checked on the wire with an httpx2 event hook), including its multipart asset upload;
- openai's client.decisions (sync and async) and its models resource;
- litellm's systemone / decisions with the typesafe and openai providers;
- jev-lite, sync and async, including its noul shorthand that sends a null criterion.

Every question type against mock-ramp's exact answers, request ids (x-request-id and
x-typesafe-request-id), and the errors each client maps: 400, 401, 413, 422, 503 retried until
answered, 504; and the API-layer rules the clients rely on (§11.1, §11.2): the default model's
`jev-latest` alias, null noul criteria, string release dates and alias entries in the models list,
GET /v1/models/{id}, the openai package's other input forms. `jevclient` is not on PyPI, so it is
not tested.

    python3 tests/e2e/clients_e2e.py --binary build/release/s1serve [--filter typesafe] [--list]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REQUIREMENTS = os.path.join(HERE, "clients", "requirements.txt")


def venv_dir() -> str:
    return os.environ.get("S1SERVE_CLIENTS_VENV") or os.path.join(ROOT, ".venv-clients")


def enter_venv() -> None:
    """Re-runs this script with the clients' venv, or fails saying how to install it."""
    venv = os.path.abspath(venv_dir())
    if os.path.abspath(sys.prefix) == venv:
        return
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, "requirements.sha256")
    with open(REQUIREMENTS, "rb") as handle:
        want = hashlib.sha256(handle.read()).hexdigest()
    try:
        with open(stamp, encoding="ascii") as handle:
            have = handle.read().strip()
    except OSError:
        have = None
    if have != want or not os.access(python, os.X_OK):
        print(f"FAIL: the client packages in {venv} are missing or not those of {REQUIREMENTS}: "
              "run scripts/install-test-clients", file=sys.stderr)
        sys.exit(1)
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


if __name__ == "__main__":
    enter_venv()

# Offline: litellm otherwise downloads its model price map at import.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_LOG", "ERROR")
for variable in ("TYPESAFE_API_KEY", "TYPESAFE_BASE_URL", "TYPESAFE_DEFAULT_MODEL", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL", "TYPESAFE_API_BASE"):
    os.environ.pop(variable, None)

sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
import s1harness as h  # noqa: E402

KEY = "k-clients-e2e"
MAX_BODY = 65536
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HEX32 = re.compile(r"^[0-9a-f]{32}$")
TOLERANCE = 1e-6
# Long enough (> 1 KiB) that typesafe-sdk compresses it when compression is on.
LONG_STATE = "Ticket: I was charged twice for my subscription this month. " * 24
OVERSIZE_STATE = "x" * (MAX_BODY + 1024)
# One character over §2.4's 256: the clients pass it on, the server refuses it (422 string_too_long).
TOO_LONG_NAME = "n" * 257
CLIENT_MODULES = ("typesafe_sdk", "openai", "litellm", "jev_lite")


class Check:
    def __init__(self):
        self.problems: list[str] = []

    def __call__(self, ok, message):
        if not ok:
            self.problems.append(message)
        return ok

    def close(self, a, b, what):
        return self(a is not None and b is not None and abs(float(a) - float(b)) <= TOLERANCE,
                    f"{what}: {a!r}, expected {b!r}")

    def raises(self, what, call, expect_type, status, error_type=None):
        """call() must raise expect_type whose status (however the client names it) is status."""
        try:
            call()
        except Exception as error:  # noqa: BLE001 - every client has its own hierarchy
            got_status = error_status(error)
            if not self(isinstance(error, expect_type) and got_status == status,
                        f"{what}: raised {type(error).__module__}.{type(error).__name__} "
                        f"(status {got_status}): {str(error)[:300]}; expected {expect_type.__name__} {status}"):
                return None
            if error_type is not None:
                body = error_body(error)
                got = detail_error_type(body)
                self(got == error_type, f"{what}: error type {got!r} in {str(body)[:300]}, expected {error_type!r}")
            return error
        self(False, f"{what}: no exception, expected {expect_type.__name__} {status}")
        return None


def error_status(error):
    for name in ("status", "status_code"):
        value = getattr(error, name, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def error_body(error):
    body = getattr(error, "body", None)
    if body is None and getattr(error, "response", None) is not None:
        try:
            body = error.response.json()
        except Exception:  # noqa: BLE001
            body = None
    return body


def detail_error_type(body):
    """The error type of either envelope (§4.1 detail object or list, §6.4 error object)."""
    if not isinstance(body, dict):
        return None
    detail = body.get("detail")
    if isinstance(detail, dict):
        return detail.get("error_type")
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        return detail[0].get("type")
    error = body.get("error")
    if isinstance(error, dict):
        return error.get("code")
    return body.get("code")


def ramp(count):
    """mock-ramp's probabilities: softmax of the label scores -i."""
    weights = [math.exp(-i) for i in range(count)]
    total = sum(weights)
    return [w / total for w in weights]


def linear_confidence(probabilities):
    n = len(probabilities)
    return 1.0 if n == 1 else min(1.0, max(0.0, (n * max(probabilities) - 1.0) / (n - 1)))


def raw_post(server, path, body, headers=None):
    all_headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    all_headers.update(headers or {})
    return h.request(server, "POST", path, headers=all_headers, body=json.dumps(body).encode(), timeout=30.0)


def metric(server, name, label=""):
    """The sum of a /metrics family's samples whose labels contain label."""
    text = h.request(server, "GET", "/metrics").body.decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if (line.startswith(name + "{") or line.startswith(name + " ")) and label in line)


# ---- the servers ---------------------------------------------------------------------------------


class Servers:
    """main: minilm (the default, so also jev-latest) and mock-ramp behind a key, 64 KiB body limit.
    busy: mock-slow (3 s per inference) with a queue of 1. late: mock-slow with a 1 s deadline."""

    def __init__(self, binary):
        self.directory = tempfile.mkdtemp(prefix="s1serve-clients-")
        keys = os.path.join(self.directory, "keys.txt")
        with open(keys, "w", encoding="ascii") as handle:
            handle.write(KEY + "\n")
        self.main = h.Server(binary, ["--model", "minilm", "--model", "mock:ramp", "--default-model", "minilm",
                                      "--api-key-file", keys, "--max-body", str(MAX_BODY), "--port", "0"],
                             name="clients-main")
        self.busy = h.Server(binary, ["--model", "mock:slow", "--queue", "1", "--api-key-file", keys, "--port", "0"],
                             name="clients-busy")
        self.late = h.Server(binary, ["--model", "mock:slow", "--timeout-ms", "1000", "--api-key-file", keys,
                                      "--port", "0"], name="clients-late")
        self.all = [self.main, self.busy, self.late]

    def start(self):
        for server in self.all:
            server.start(ready_timeout=60.0, wait_health=False)
        deadline = time.monotonic() + 60.0
        for server in self.all:
            server.wait_settled(deadline)

    def stop(self):
        for server in self.all:
            server.stop()

    @staticmethod
    def url(server):
        return f"http://{server.host}:{server.port}"


# ---- the checks ------------------------------------------------------------------------------------

CHECKS = {}


def check(group):
    def register(function):
        CHECKS[function.__name__] = (group, function)
        return function

    return register


def systemone_questions(kinds):
    """The same three questions as typed objects of one client's module."""
    return {
        "team": kinds.Choice(instructions="Which team?",
                             criteria={"billing": "Payments and invoices", "technical": None, "sales": {"topic": "plans"}}),
        "refund": kinds.Noul(instructions="Does the customer ask for a refund?"),
        "anger": kinds.Score(instructions="How upset is the customer?", criteria=["calm", "annoyed", "furious"]),
    }


def check_ramp_answers(c, where, team, refund, anger):
    """The ramp answers of systemone_questions: team/anger objects expose .choice/.probabilities/..."""
    p3 = ramp(3)
    c(team.choice == "billing", f"{where}: team.choice {team.choice!r}")
    for name, expected in zip(["billing", "technical", "sales"], p3):
        c.close(team.probabilities.get(name), expected, f"{where}: team p[{name}]")
    c.close(team.confidence, linear_confidence(p3), f"{where}: team confidence")
    c.close(refund.noul, ramp(2)[0], f"{where}: refund noul")
    c.close(anger.score, sum(i * p for i, p in enumerate(p3)), f"{where}: anger score")
    probabilities = {str(k): v for k, v in anger.probabilities.items()}
    for i, expected in enumerate(p3):
        c.close(probabilities.get(str(i)), expected, f"{where}: anger p[{i}]")
    legend = {str(k): v for k, v in anger.legend.items()}
    c(legend == {"0": "calm", "1": "annoyed", "2": "furious"}, f"{where}: anger legend {legend!r}")


class HeaderLog:
    """httpx(2) event hooks recording what went on the wire."""

    def __init__(self):
        self.requests = []
        self.responses = []

    def on_request(self, request):
        self.requests.append({k.lower(): v for k, v in request.headers.items()})

    def on_response(self, response):
        self.responses.append({k.lower(): v for k, v in response.headers.items()})

    async def on_request_async(self, request):
        self.on_request(request)

    async def on_response_async(self, response):
        self.on_response(response)


def typesafe_client(servers, compression, log=None, retry=None, api_key=KEY, server=None, asynchronous=False):
    import httpx2
    import typesafe_sdk

    retry = retry or typesafe_sdk.RetryPolicy(max_retries=0)
    url = Servers.url(server or servers.main)
    if asynchronous:
        hooks = {"request": [log.on_request_async], "response": [log.on_response_async]} if log else {}
        http = httpx2.AsyncClient(timeout=30.0, event_hooks=hooks)
        return typesafe_sdk.AsyncTypeSafeClient(api_key=api_key, base_url=url, compression=compression, retry=retry,
                                                http_client=http)
    hooks = {"request": [log.on_request], "response": [log.on_response]} if log else {}
    http = httpx2.Client(timeout=30.0, event_hooks=hooks)
    return typesafe_sdk.TypeSafeClient(api_key=api_key, base_url=url, compression=compression, retry=retry,
                                       http_client=http)


def typesafe_sync(servers, compression):
    import typesafe_sdk as ts

    c = Check()
    log = HeaderLog()
    label = f"typesafe-sdk sync compression={compression}"
    with typesafe_client(servers, compression, log) as client:
        try:
            response = client.system_one(state=LONG_STATE, questions=systemone_questions(ts), model="mock-ramp",
                                         extra_headers={"x-request-id": "clients-e2e-1"})
        except ts.TypeSafeError as error:
            response = None
            c(False, f"{label}: three questions: {type(error).__name__}: {error}")
        encoding = log.requests[-1].get("content-encoding")
        c(encoding == ("zstd" if compression else None), f"{label}: sent Content-Encoding {encoding!r}")
        if response is not None:
            c(response.model == "mock-ramp", f"{label}: model {response.model!r}")
            check_ramp_answers(c, label, response.choices["team"], response.nouls["refund"], response.scores["anger"])
            c(isinstance(response.usage.input_tokens, int) and response.usage.input_tokens > 0,
              f"{label}: usage {response.usage!r}")
            c(response.usage.output_tokens == 0, f"{label}: output_tokens {response.usage.output_tokens!r}")
            headers = log.responses[-1]
            c(headers.get("x-request-id") == "clients-e2e-1", f"{label}: x-request-id {headers.get('x-request-id')!r}")
            c(response.__dict__.get("_request_id") == "clients-e2e-1",
              f"{label}: response.request_id (x-typesafe-request-id) {response.__dict__.get('_request_id')!r}")

        unknown = c.raises(f"{label}: unknown model", lambda: client.system_one(
            state="x", model="no-such-model", questions={"q": ts.Noul(instructions="y")}),
            ts.TypeSafeBadRequestError, 400, "unknown_model")
        if unknown is not None:
            c(bool(unknown.request_id) and unknown.request_id == unknown.headers.get("x-request-id"),
              f"{label}: 400 request_id {unknown.request_id!r} vs x-request-id {unknown.headers.get('x-request-id')!r}")
        c.raises(f"{label}: invalid question", lambda: client.system_one(
            state="x", model="mock-ramp", questions={"q": {"type": "mystery"}}),
            ts.TypeSafeUnprocessableEntityError, 422, "union_tag_invalid")
        # Over the body limit; with zstd the wire body is small and the decoded size is what counts.
        c.raises(f"{label}: oversize body", lambda: client.system_one(
            state=OVERSIZE_STATE, model="mock-ramp", questions={"q": ts.Noul(instructions="y")}),
            ts.TypeSafeAPIError, 413, "payload_too_large")

        # An image goes up as multipart/form-data; a text-only model refuses it as 400 unsupported_media.
        png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                            "1f15c4890000000d49444154789c6360000002000105fa8e3a0000000049454e44ae426082")
        image = ts.Image(png)
        c.raises(f"{label}: image on a text model", lambda: client.system_one(
            state=f"Photo: {image}", model="mock-ramp", questions={"q": ts.Noul(instructions="damaged?")},
            assets={str(image): image}), ts.TypeSafeBadRequestError, 400, "unsupported_media")
        sent = log.requests[-1].get("content-type", "")
        c(sent.startswith("multipart/form-data"), f"{label}: the image request went as {sent!r}, expected multipart")

    with typesafe_client(servers, compression, api_key="wrong-key") as stranger:
        error = c.raises(f"{label}: wrong key", lambda: stranger.system_one(
            state="x", model="mock-ramp", questions={"q": ts.Noul(instructions="y")}),
            ts.TypeSafeAuthenticationError, 401, "unauthorized")
        if error is not None:
            c(HEX32.match(error.request_id or ""), f"{label}: 401 request_id {error.request_id!r}")
    return c.problems


def typesafe_async(servers, compression):
    import typesafe_sdk as ts

    c = Check()
    log = HeaderLog()
    label = f"typesafe-sdk async compression={compression}"

    async def scenario():
        async with typesafe_client(servers, compression, log, asynchronous=True) as client:
            responses = await asyncio.gather(*[
                client.system_one(state=LONG_STATE + str(i), questions=systemone_questions(ts), model="mock-ramp")
                for i in range(4)])
            for i, response in enumerate(responses):
                check_ramp_answers(c, f"{label} #{i}", response.choices["team"], response.nouls["refund"],
                                   response.scores["anger"])
            encodings = {headers.get("content-encoding") for headers in log.requests}
            c(encodings == {"zstd" if compression else None}, f"{label}: sent Content-Encoding {encodings!r}")
            ids = [headers.get("x-request-id") for headers in log.responses]
            c(len(set(ids)) == 4 and all(HEX32.match(i or "") for i in ids), f"{label}: request ids {ids!r}")
            typesafe_ids = [headers.get("x-typesafe-request-id") for headers in log.responses]
            c(typesafe_ids == ids, f"{label}: x-typesafe-request-id {typesafe_ids!r} vs x-request-id {ids!r}")
            try:
                await client.system_one(state="x", model="no-such-model", questions={"q": ts.Noul(instructions="y")})
                c(False, f"{label}: unknown model answered")
            except ts.TypeSafeBadRequestError as error:
                c(error.status == 400, f"{label}: unknown model status {error.status}")

    try:
        asyncio.run(scenario())
    except Exception as error:  # noqa: BLE001
        c(False, f"{label}: {type(error).__name__}: {error}")
    return c.problems


# Each typesafe-sdk scenario twice: bodies plain, and zstd-compressed as the SDK sends them by default.
for _kind, _scenario in (("sync", typesafe_sync), ("async", typesafe_async)):
    for _suffix, _compression in (("plain", False), ("zstd", "zstd")):
        CHECKS[f"typesafe_{_kind}_{_suffix}"] = ("main", functools.partial(_scenario, compression=_compression))


@check("main")
def openai_decisions(servers):
    import openai

    c = Check()
    label = "openai decisions"
    client = openai.OpenAI(base_url=Servers.url(servers.main) + "/v1", api_key=KEY, max_retries=0)
    questions = [
        {"type": "predicate", "name": "refund", "instructions": "Does the customer ask for a refund?"},
        {"type": "choice", "name": "team", "instructions": "Which team?",
         "choices": [{"value": "billing", "description": "Payments and invoices"}, {"value": "technical"},
                     {"value": True, "description": "anything else"}]},
        {"type": "score", "instructions": "How upset is the customer?",
         "levels": [{"label": "calm"}, {"label": "annoyed", "description": "some frustration"}, {"label": "furious"}]},
    ]
    raw = client.decisions.with_raw_response.create(model="mock-ramp", input=LONG_STATE, questions=questions,
                                                    extra_headers={"x-request-id": "clients-e2e-openai"})
    decision = raw.parse()
    c(raw.headers.get("x-request-id") == "clients-e2e-openai", f"{label}: x-request-id {raw.headers.get('x-request-id')!r}")
    c(raw.headers.get("x-typesafe-request-id") == "clients-e2e-openai",
      f"{label}: x-typesafe-request-id {raw.headers.get('x-typesafe-request-id')!r}")
    c(decision._request_id == "clients-e2e-openai", f"{label}: _request_id {decision._request_id!r}")
    c(decision.model == "mock-ramp", f"{label}: model {decision.model!r}")
    p2, p3 = ramp(2), ramp(3)
    refund, team, anger = decision.answers
    c(refund.type == "predicate" and refund.name == "refund", f"{label}: answer 0 {refund!r}")
    c.close(refund.probability, p2[0], f"{label}: predicate probability")
    c(team.type == "choice" and team.choice == "billing" and team.name == "team", f"{label}: answer 1 {team!r}")
    values = [p.value for p in team.probabilities]
    c(values == ["billing", "technical", True], f"{label}: choice values {values!r} (a boolean stays boolean)")
    for p, expected in zip(team.probabilities, p3):
        c.close(p.probability, expected, f"{label}: choice p[{p.value}]")
    c(anger.type == "score" and anger.name is None, f"{label}: answer 2 {anger!r}")
    c.close(anger.score, sum(i * p for i, p in enumerate(p3)), f"{label}: score")
    c([(p.value, p.label) for p in anger.probabilities] == [(0, "calm"), (1, "annoyed"), (2, "furious")],
      f"{label}: score levels {anger.probabilities!r}")
    usage = decision.usage
    c(usage.input_tokens > 0 and usage.total_tokens == usage.input_tokens and usage.output_tokens == 0,
      f"{label}: usage {usage!r}")
    c(getattr(usage.input_tokens_details, "cached_tokens", None) is not None, f"{label}: usage details {usage!r}")

    def create(model="mock-ramp", input="x", qs=None):
        return client.decisions.create(model=model, input=input, questions=qs or [{"type": "predicate", "instructions": "y"}])

    c.raises(f"{label}: unknown model", lambda: create(model="no-such-model"), openai.BadRequestError, 400, "unknown_model")
    c.raises(f"{label}: duplicate choice", lambda: create(qs=[{"type": "choice", "instructions": "w",
                                                               "choices": [{"value": "a"}, {"value": "a"}]}]),
             openai.UnprocessableEntityError, 422, "duplicate")
    c.raises(f"{label}: oversize body", lambda: create(input=OVERSIZE_STATE), openai.APIStatusError, 413,
             "payload_too_large")
    stranger = openai.OpenAI(base_url=Servers.url(servers.main) + "/v1", api_key="wrong-key", max_retries=0)
    c.raises(f"{label}: wrong key", lambda: stranger.decisions.create(
        model="mock-ramp", input="x", questions=[{"type": "predicate", "instructions": "y"}]),
        openai.AuthenticationError, 401, "unauthorized")
    return c.problems


@check("main")
def openai_async_and_models(servers):
    import openai

    c = Check()
    base = Servers.url(servers.main) + "/v1"

    async def scenario():
        client = openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0)
        decision = await client.decisions.create(model="mock-ramp", input="hello",
                                                 questions=[{"type": "predicate", "instructions": "y"}])
        c.close(decision.answers[0].probability, ramp(2)[0], "openai async decisions: predicate")
        await client.close()

    try:
        asyncio.run(scenario())
    except openai.OpenAIError as error:
        c(False, f"openai async decisions: {type(error).__name__}: {error}")

    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
    ids = [m.id for m in client.models.list()]
    c(ids == ["minilm", "mock-ramp"], f"openai models.list(): ids {ids!r}, expected the canonical ids")
    return c.problems


@check("main")
def litellm_calls(servers):
    import litellm

    litellm.suppress_debug_info = True
    c = Check()
    url = Servers.url(servers.main)
    questions = {"team": {"type": "choice", "instructions": "Which team?",
                          "criteria": {"billing": "Payments and invoices", "technical": None, "sales": None}},
                 "refund": {"type": "noul", "instructions": "Refund?"},
                 "anger": {"type": "score", "instructions": "Upset?", "criteria": ["calm", "annoyed", "furious"]}}
    try:
        response = litellm.systemone(model="typesafe/mock-ramp", api_base=url, api_key=KEY, state=LONG_STATE,
                                     questions=questions)
        answers = response.answers
        c(response.model == "mock-ramp", f"litellm systemone: model {response.model!r}")
        c(answers["team"].choice == "billing", f"litellm systemone: team {answers['team']!r}")
        c.close(answers["refund"].noul, ramp(2)[0], "litellm systemone: noul")
        c.close(answers["anger"].score, sum(i * p for i, p in enumerate(ramp(3))), "litellm systemone: score")
    except Exception as error:  # noqa: BLE001
        c(False, f"litellm systemone: {type(error).__name__}: {error}")

    async def scenario():
        return await litellm.asystemone(model="typesafe/mock-ramp", api_base=url, api_key=KEY, state="x",
                                        questions={"refund": {"type": "noul", "instructions": "Refund?"}})

    try:
        c.close(asyncio.run(scenario()).answers["refund"].noul, ramp(2)[0], "litellm asystemone: noul")
    except Exception as error:  # noqa: BLE001
        c(False, f"litellm asystemone: {type(error).__name__}: {error}")

    try:
        decision = litellm.decisions(model="openai/mock-ramp", api_base=url + "/v1", api_key=KEY, input="x",
                                     questions=[{"type": "predicate", "instructions": "y"},
                                                {"type": "choice", "instructions": "w",
                                                 "choices": [{"value": "a"}, {"value": "b"}]}])
        c.close(decision.answers[0].probability, ramp(2)[0], "litellm decisions: predicate")
        c(decision.answers[1].choice == "a", f"litellm decisions: choice {decision.answers[1]!r}")
    except Exception as error:  # noqa: BLE001
        c(False, f"litellm decisions: {type(error).__name__}: {error}")

    c.raises("litellm systemone: unknown model", lambda: litellm.systemone(
        model="typesafe/no-such-model", api_base=url, api_key=KEY, state="x",
        questions={"q": {"type": "noul", "instructions": "y"}}), litellm.BadRequestError, 400)
    c.raises("litellm systemone: wrong key", lambda: litellm.systemone(
        model="typesafe/mock-ramp", api_base=url, api_key="wrong-key", state="x",
        questions={"q": {"type": "noul", "instructions": "y"}}), litellm.AuthenticationError, 401)
    c.raises("litellm systemone: invalid question", lambda: litellm.systemone(
        model="typesafe/mock-ramp", api_base=url, api_key=KEY, state="x",
        questions={"q": {"type": "choice", "instructions": "y", "criteria": {TOO_LONG_NAME: None, "b": None}}}),
        litellm.BadRequestError, 422)  # litellm's typesafe provider maps 422 to BadRequestError
    c.raises("litellm systemone: oversize body", lambda: litellm.systemone(
        model="typesafe/mock-ramp", api_base=url, api_key=KEY, state=OVERSIZE_STATE,
        questions={"q": {"type": "noul", "instructions": "y"}}), litellm.BadRequestError, 413)
    return c.problems


def jev_client(servers, api_key=KEY, server=None, max_retries=0, asynchronous=False):
    import jev_lite

    cls = jev_lite.AsyncTypeSafe if asynchronous else jev_lite.TypeSafe
    return cls(api_key=api_key, base_url=Servers.url(server or servers.main), max_retries=max_retries, timeout=30.0)


@check("main")
def jev_lite_calls(servers):
    import jev_lite

    c = Check()
    label = "jev-lite"
    with jev_client(servers) as client:
        response = client.system_one.create(state=LONG_STATE, questions=systemone_questions(jev_lite), model="mock-ramp",
                                            extra_headers={"x-request-id": "clients-e2e-jev"})
        a = response.answers
        check_ramp_answers(c, label, a["team"], a["refund"], a["anger"])
        c(response.request_id == "clients-e2e-jev", f"{label}: request_id (x-typesafe-request-id) {response.request_id!r}")
        c.raises(f"{label}: unknown model", lambda: client.system_one.create(
            state="x", model="no-such-model", questions={"q": jev_lite.Noul(instructions="y")}),
            jev_lite.BadRequestError, 400, "unknown_model")
        c.raises(f"{label}: invalid question", lambda: client.system_one.create(
            state="x", model="mock-ramp", questions={"q": jev_lite.Choice(criteria={TOO_LONG_NAME: None, "b": None})}),
            jev_lite.UnprocessableEntityError, 422, "string_too_long")
        c.raises(f"{label}: oversize body", lambda: client.system_one.create(
            state=OVERSIZE_STATE, model="mock-ramp", questions={"q": jev_lite.Noul(instructions="y")}),
            jev_lite.APIStatusError, 413, "payload_too_large")
    with jev_client(servers, api_key="wrong-key") as stranger:
        c.raises(f"{label}: wrong key", lambda: stranger.system_one.create(
            state="x", model="mock-ramp", questions={"q": jev_lite.Noul(instructions="y")}),
            jev_lite.AuthenticationError, 401, "unauthorized")

    async def scenario():
        async with jev_client(servers, asynchronous=True) as client:
            results = await asyncio.gather(*[client.system_one.create(
                state=f"x{i}", model="mock-ramp", questions={"q": jev_lite.Noul(instructions="y")}) for i in range(3)])
            for result in results:
                c.close(result.answers["q"].noul, ramp(2)[0], f"{label} async: noul")

    try:
        asyncio.run(scenario())
    except Exception as error:  # noqa: BLE001
        c(False, f"{label} async: {type(error).__name__}: {error}")
    return c.problems


@check("busy")
def overloaded_then_retried(servers):
    """mock-slow busy (one running, one queued): every client maps 503 overloaded with its
    Retry-After, and the TypeSafe clients' retries get the request answered once a slot frees."""
    import jev_lite
    import litellm
    import openai
    import typesafe_sdk as ts

    litellm.suppress_debug_info = True
    c = Check()
    server = servers.busy
    body = {"model": "mock-slow", "state": "x", "questions": {"q": {"type": "noul", "instructions": "y"}}}
    url = Servers.url(server)
    question = {"q": {"type": "noul", "instructions": "y"}}
    # The clients exist before the server is made busy: building one (TLS context, pools) can take
    # longer under load than the ~3 s the queue stays full.
    typesafe = typesafe_client(servers, False, server=server)
    jev = jev_client(servers, server=server)
    openai_client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    refusals = {
        "typesafe-sdk": (lambda: typesafe.system_one(state="x", model="mock-slow", questions=question),
                         ts.TypeSafeInternalServerError, "overloaded"),
        "jev-lite": (lambda: jev.system_one.create(state="x", model="mock-slow", questions=question),
                     jev_lite.APIStatusError, "overloaded"),
        "openai": (lambda: openai_client.decisions.create(
            model="mock-slow", input="x", questions=[{"type": "predicate", "instructions": "y"}]),
            openai.InternalServerError, "overloaded"),
        "litellm": (lambda: litellm.systemone(model="typesafe/mock-slow", api_base=url, api_key=KEY, state="x",
                                              questions=question, num_retries=0), litellm.ServiceUnavailableError, None),
    }
    blockers = [threading.Thread(target=raw_post, args=(server, "/v1/systemone", body)) for _ in range(2)]
    for blocker in blockers:
        blocker.start()
        time.sleep(0.1)
    # One running and one queued: the refusals below, sent at once, must all come before ~3 s.
    deadline = time.monotonic() + 5.0
    while metric(server, "s1serve_queue_depth") < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(refusals)) as pool:
        futures = {name: pool.submit(c.raises, f"{name}: overloaded", call, expected, 503, error_type)
                   for name, (call, expected, error_type) in refusals.items()}
        errors = {name: future.result(timeout=60) for name, future in futures.items()}
    typesafe.close()
    jev.close()
    if errors["typesafe-sdk"] is not None:
        retry_after = errors["typesafe-sdk"].headers.get("retry-after", "")
        c(retry_after.isdigit(), f"typesafe-sdk: 503 Retry-After {retry_after!r}")

    outcomes = {}

    def typesafe_retrying():
        policy = ts.RetryPolicy(max_retries=20, timeout=40.0)
        with typesafe_client(servers, False, server=server, retry=policy) as retrying:
            outcomes["typesafe-sdk"] = retrying.system_one(state="x", model="mock-slow", questions=question).nouls["q"].noul

    def jev_retrying():
        with jev_client(servers, server=server, max_retries=20) as retrying:
            outcomes["jev-lite"] = retrying.system_one.create(state="x", model="mock-slow", questions=question).answers["q"].noul

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(function) for name, function in (("typesafe-sdk", typesafe_retrying),
                                                                       ("jev-lite", jev_retrying))}
        for name, future in futures.items():
            try:
                future.result(timeout=60)
                c.close(outcomes.get(name), ramp(2)[0], f"{name}: retried request's noul")
            except Exception as error:  # noqa: BLE001
                c(False, f"{name}: retrying through 503: {type(error).__name__}: {error}")
    for blocker in blockers:
        blocker.join(timeout=30)
    rejected = metric(server, "s1serve_rejected_total", 'reason="overloaded"')
    c(rejected >= 6, f"/metrics: {rejected} overloaded rejections, expected the 4 non-retrying ones and the retried ones")
    return c.problems


@check("late")
def deadline_exceeded(servers):
    """A 1 s deadline against a 3 s inference: every client sees 504 (retries off)."""
    import jev_lite
    import litellm
    import openai
    import typesafe_sdk as ts

    litellm.suppress_debug_info = True
    c = Check()
    server = servers.late
    url = Servers.url(server)
    question = {"q": {"type": "noul", "instructions": "y"}}
    openai_client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    calls = {
        "typesafe-sdk": (lambda: typesafe_client(servers, False, server=server).system_one(
            state="x", model="mock-slow", questions=question), ts.TypeSafeInternalServerError),
        "jev-lite": (lambda: jev_client(servers, server=server).system_one.create(
            state="x", model="mock-slow", questions=question), jev_lite.APIStatusError),
        "openai": (lambda: openai_client.decisions.create(
            model="mock-slow", input="x", questions=[{"type": "predicate", "instructions": "y"}]),
            openai.InternalServerError),
        "litellm": (lambda: litellm.systemone(model="typesafe/mock-slow", api_base=url, api_key=KEY, state="x",
                                              questions=question, num_retries=0), litellm.Timeout),
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = {name: pool.submit(c.raises, f"{name}: deadline", call, expected, 504)
                   for name, (call, expected) in calls.items()}
        for future in futures.values():
            future.result(timeout=60)
    return c.problems


# ---- contract §11.1/§11.2 rules of the API layer ----------------------------------------------------
# What every TypeSafe client relies on beyond the v1 contract: the default model's jev-latest alias,
# null noul criteria, string release dates and alias entries in the models list, GET /v1/models/{id},
# and the openai package's other input forms.


@check("main")
def typesafe_api_rules(servers):
    import typesafe_sdk as ts

    c = Check()
    label = "typesafe-sdk"
    with typesafe_client(servers, False) as client:
        # The SDK's default model is jev-latest: the default model's alias.
        try:
            default = client.system_one(state="I was charged twice.", questions={"refund": ts.Noul(instructions="refund?")})
            c(default.model == "minilm", f"{label}: jev-latest answered by {default.model!r}, expected minilm")
            c(0.0 <= default.nouls["refund"].noul <= 1.0, f"{label}: jev-latest noul {default.nouls['refund']!r}")
        except ts.TypeSafeError as error:
            c(False, f"{label}: default model jev-latest: {type(error).__name__}: {error}")
        # A noul criterion the caller left undescribed is sent as null: as if absent.
        try:
            half = client.system_one(state="x", model="mock-ramp",
                                     questions={"q": ts.Noul(criteria=ts.NoulCriteria(true="It is urgent", false=None))})
            c.close(half.nouls["q"].noul, ramp(2)[0], f"{label}: noul with a null false criterion")
        except ts.TypeSafeError as error:
            c(False, f"{label}: noul with a null false criterion: {type(error).__name__}: {error}")
        # models.list() validates release_date as a string; alias entries name the alias.
        try:
            names = [m.name for m in client.models.list().models]
            for name in ("minilm", "mock-ramp", "all-minilm-l6-v2", "jev-latest"):
                c(name in names, f"{label} models.list(): {name!r} missing from {names!r}")
        except ts.TypeSafeError as error:
            c(False, f"{label} models.list(): {type(error).__name__}: {error}")

    async def listing():
        async with typesafe_client(servers, "zstd", asynchronous=True) as client:
            return (await client.models.list()).models

    try:
        for model in asyncio.run(listing()):
            c(DATE.match(model.release_date), f"{label} async models.list(): {model.name} release_date {model.release_date!r}")
    except ts.TypeSafeError as error:
        c(False, f"{label} async models.list(): {type(error).__name__}: {error}")
    return c.problems


@check("main")
def openai_api_rules(servers):
    import openai

    c = Check()
    client = openai.OpenAI(base_url=Servers.url(servers.main) + "/v1", api_key=KEY, max_retries=0)
    # §11.2: the input forms decision_create_params allows beyond plain user text.
    try:
        rich = client.decisions.create(
            model="mock-ramp", questions=[{"type": "predicate", "instructions": [{"type": "input_text", "text": "Refund?"}]}],
            input=[{"role": "developer", "content": "You route support tickets."},
                   {"role": "user", "content": [{"type": "input_text", "text": "I was charged twice."},
                                                {"type": "input_json", "data": {"order": 42}}]},
                   {"role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]}],
            prompt_cache_key="clients-e2e", safety_identifier="user-1")
        c.close(rich.answers[0].probability, ramp(2)[0], "openai decisions: roles and input_json")
    except openai.OpenAIError as error:
        c(False, f"openai decisions: developer/assistant messages, input_json, instruction parts: "
                 f"{type(error).__name__}: {error}")
    for name, expected in (("mock-ramp", "mock-ramp"), ("minilm", "minilm")):
        try:
            model = client.models.retrieve(name)
            c(model.id == expected, f"openai models.retrieve({name!r}): id {model.id!r}")
        except openai.OpenAIError as error:
            c(False, f"openai models.retrieve({name!r}): {type(error).__name__}: {error}")
    c.raises("openai models.retrieve(unknown)", lambda: client.models.retrieve("no-such-model"),
             openai.NotFoundError, 404)
    return c.problems


@check("main")
def litellm_api_rules(servers):
    import litellm

    litellm.suppress_debug_info = True
    c = Check()
    # The typesafe provider's default model name is what TypeSafe clients send.
    try:
        default = litellm.systemone(model="typesafe/jev-latest", api_base=Servers.url(servers.main), api_key=KEY,
                                    state="x", questions={"refund": {"type": "noul", "instructions": "Refund?"}})
        c(default.model == "minilm", f"litellm systemone jev-latest: model {default.model!r}")
    except Exception as error:  # noqa: BLE001
        c(False, f"litellm systemone jev-latest: {type(error).__name__}: {error}")
    return c.problems


@check("main")
def jev_lite_api_rules(servers):
    import jev_lite

    c = Check()
    label = "jev-lite"
    with jev_client(servers) as client:
        try:
            # jev-lite's shorthand sends the side left out as null.
            half = client.system_one.create(state="x", model="mock-ramp", questions={"q": jev_lite.Noul(true="It is urgent")})
            c.close(half.answers["q"].noul, ramp(2)[0], f"{label}: Noul(true=...) shorthand")
        except jev_lite.TypeSafeError as error:
            c(False, f"{label}: Noul(true=...) shorthand (null false criterion): {type(error).__name__}: {error}")
        try:
            default = client.system_one.create(state="x", questions={"q": jev_lite.Noul(instructions="y")})
            c(default.model == "minilm", f"{label}: jev-latest answered by {default.model!r}")
        except jev_lite.TypeSafeError as error:
            c(False, f"{label}: default model jev-latest: {type(error).__name__}: {error}")
        try:
            listing = client.models.list()
            names = [m.name for m in listing.models]
            c("jev-latest" in names and "mock-ramp" in names, f"{label}: models {names!r}")
            c(all(isinstance(m.release_date, str) and DATE.match(m.release_date) for m in listing.models),
              f"{label}: release dates {[m.release_date for m in listing.models]!r}")
        except jev_lite.TypeSafeError as error:
            c(False, f"{label}: models.list(): {type(error).__name__}: {error}")
    return c.problems


# ---- driver ------------------------------------------------------------------------------------------


def run_check(name, servers):
    start = time.monotonic()
    try:
        problems = CHECKS[name][1](servers)
    except Exception:  # noqa: BLE001 - a client raising where the check did not expect it
        problems = ["unexpected exception:\n" + traceback.format_exc()]
    return name, problems, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--filter", default="", help="run only checks whose name contains this")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    names = [name for name in CHECKS if args.filter in name]
    if args.list:
        print("\n".join(names))
        return 0
    if not names:
        print(f"FAIL: no check matches {args.filter!r}", file=sys.stderr)
        return 1
    h.install_signal_handlers()
    servers = Servers(args.binary)
    failed = 0
    # litellm alone takes seconds to import: import the clients while the servers start.
    importer = threading.Thread(target=lambda: [__import__(module) for module in CLIENT_MODULES])
    importer.start()
    try:
        servers.start()
        importer.join()
        # The groups use different servers and run side by side; within a group, one at a time.
        groups = {}
        for name in names:
            groups.setdefault(CHECKS[name][0], []).append(name)

        def run_group(members):
            return [run_check(name, servers) for name in members]

        with concurrent.futures.ThreadPoolExecutor(max_workers=len(groups)) as pool:
            for results in pool.map(run_group, groups.values()):
                for name, problems, seconds in results:
                    print(f"{'ok  ' if not problems else 'FAIL'} {name} ({seconds:.1f} s)")
                    for problem in problems:
                        print(f"     - {problem}")
                    failed += bool(problems)
    finally:
        servers.stop()
    for server in servers.all:
        if failed:
            print(f"log of {server.name}: {server.log.name}")
        else:
            server.cleanup_log()
    print(f"{len(names) - failed}/{len(names)} client checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
