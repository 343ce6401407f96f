#!/usr/bin/env python3
"""Media intake through the real server (contract §11.3): every form reaches a model that takes
images (the test backend mock:images, whose input_tokens count one token per 32x32 tile of each
decoded image), a text-only model answers 400 unsupported_media, bad media 400 invalid_media
naming the image, and a pixel bomb is refused from its header at once. The images are the
committed fixtures of tests/fixtures/images. Python standard library only.

Usage: media_e2e.py --binary path/to/s1serve [--filter REGEX] [--serial] [--keep-logs]
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_e2e as e  # noqa: E402
from hardening_e2e import sdk_multipart  # noqa: E402
from run_e2e import Checker, h, post, start_server  # noqa: E402

IMAGES = os.path.join(os.path.dirname(HERE), "fixtures", "images")
QUESTIONS = {"q": {"type": "noul", "instructions": "Is the picture damaged?"}}


def fixture(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


def b64(name):
    return base64.b64encode(fixture(name)).decode()


def data_url(name, media_type):
    return f"data:{media_type};base64,{b64(name)}"


def serve(name):
    return start_server(name, "--model", "mock:images", "--model", "mock:ramp", "--default-model", "mock-images",
                        "--port", "0")


def expect_error(check, response, status, error_type, label, message_part=None):
    problems = []
    h.check_error_envelope(response, status, error_type, problems)
    check.extend(problems, f"{label}: ")
    if message_part is not None and not problems:
        message = response.json()["detail"]["message"]
        check(message_part in message, f"{label}: message {message!r} lacks {message_part!r}")


def tokens(response):
    return response.json()["usage"]["input_tokens"]


def test_every_form_reaches_an_image_model():
    check = Checker()
    with serve("media-forms") as server:
        text = post(server, {"state": "Photo", "questions": QUESTIONS})
        check(text.status == 200, f"text only: {text.status} {text.body[:200]!r}")
        base = tokens(text)
        # 13x7 and 7x13 images are one tile each.
        requests = {
            "images (base64, data URL)": {"state": "Photo", "questions": QUESTIONS,
                                          "images": [b64("rgb8.png"), data_url("exif6.jpg", "image/jpeg")]},
            "assets (data_base64)": {"state": "Photo", "questions": QUESTIONS, "assets": {
                "Photo": {"type": "image", "format": "webp", "data_base64": b64("lossy.webp")},
                "hoto": {"type": "image", "format": "png", "data_base64": b64("palette8_adam7.png")}}},
            "state image parts": {"state": ["Photo", {"type": "image_url", "image_url": {"url": data_url("cmyk.jpg", "image/jpeg")}},
                                            {"type": "input_image", "image_url": data_url("rgba16.png", "image/png")}],
                                  "questions": QUESTIONS},
        }
        for label, body in requests.items():
            response = post(server, body)
            check(response.status == 200, f"{label}: {response.status} {response.body[:300]!r}")
            if response.status == 200 and label != "state image parts":
                check(tokens(response) == base + 2, f"{label}: input_tokens {tokens(response)}, expected {base} + 2")
        # The official SDK's upload: the JSON part names each asset's part.
        reference = f"<image:{uuid.uuid4().hex}>"
        request = {"state": f"Photo {reference}", "model": "mock-images", "questions": QUESTIONS,
                   "assets": {reference: {"type": "image", "part": "asset-0"}}}
        content_type, body = sdk_multipart([("request", "application/json", json.dumps(request).encode(), None),
                                            ("asset-0", "image/png", fixture("gray16.png"), "asset-0")])
        response = h.request(server, "POST", "/v1/systemone", headers=[("Content-Type", content_type)], body=body)
        check(response.status == 200, f"multipart upload: {response.status} {response.body[:300]!r}")
        # /v1/decisions input_image parts.
        decisions = {"model": "mock-images", "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Photo"}, {"type": "input_image", "image_url": data_url("exif3.jpg", "image/jpeg")}]}],
            "questions": [{"type": "predicate", "instructions": "Damaged?"}]}
        response = post(server, decisions, path="/v1/decisions")
        check(response.status == 200, f"/v1/decisions input_image: {response.status} {response.body[:300]!r}")
        models = h.request(server, "GET", "/v1/models").json()["models"]
        limits = {entry["name"]: entry.get("max_images") for entry in models if "alias_of" not in entry}
        check(limits == {"mock-images": 8, "mock-ramp": 0}, f"/v1/models max_images: {limits}")
        metrics = h.request(server, "GET", "/metrics").body.decode()
        images = e.metric_value(metrics, "s1serve_images_total", {"model": "mock-images"})
        check(images == 8.0, f"s1serve_images_total: {images}, expected 8")
    return check.problems


def test_refusals():
    check = Checker()
    with serve("media-refusals") as server:
        png = b64("rgb8.png")
        response = post(server, {"model": "mock-ramp", "state": "Photo", "questions": QUESTIONS, "images": [png]})
        expect_error(check, response, 400, "unsupported_media", "text-only model", "takes no images")
        response = post(server, {"state": "Photo", "questions": QUESTIONS, "images": [b64("truncated.jpg")]})
        expect_error(check, response, 400, "invalid_media", "truncated JPEG", "images[0] is invalid")
        response = post(server, {"state": "Photo", "questions": QUESTIONS,
                                 "assets": {"photo": {"type": "image", "format": "png", "data_base64": png}}})
        expect_error(check, response, 400, "invalid_media", "unreferenced asset", 'asset "photo" is not referenced')
        response = post(server, {"state": "Photo", "questions": QUESTIONS, "images": [png] * 9})
        expect_error(check, response, 400, "invalid_media", "nine images", "at most 8")
        response = post(server, {"state": "Photo", "questions": QUESTIONS, "images": ["https://example.com/a.png"]})
        expect_error(check, response, 400, "unsupported_media", "remote URL", "never fetches")
        response = post(server, {"state": "Photo", "questions": QUESTIONS,
                                 "images": [data_url("rgb8.png", "image/jpeg")]})
        expect_error(check, response, 400, "invalid_media", "declared format", "declared jpeg")
        decisions = {"model": "mock-ramp", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": data_url("rgb8.png", "image/png")}]}],
            "questions": [{"type": "predicate", "instructions": "Damaged?"}]}
        response = post(server, decisions, path="/v1/decisions")
        error = response.json().get("error", {}) if response.status == 400 else {}
        check(error.get("code") == "unsupported_media", f"/v1/decisions text-only: {response.status} {response.body[:200]!r}")
        # A 100,000 x 100,000 PNG of a few kilobytes: refused from its header, not decoded.
        started = time.monotonic()
        response = post(server, {"state": "Photo", "questions": QUESTIONS, "images": [b64("bomb.png")]})
        elapsed = time.monotonic() - started
        expect_error(check, response, 400, "invalid_media", "pixel bomb", "100000x100000 pixels")
        check(elapsed < 1.0, f"pixel bomb took {elapsed:.3f} s")
    return check.problems


TESTS = [test_every_form_reaches_an_image_model, test_refusals]


def main():
    return e.main(TESTS, __doc__)


if __name__ == "__main__":
    e.run_as_script(main)
