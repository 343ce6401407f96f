#!/usr/bin/env python3
"""Writes every request body of the conformance cases, as the runner would send it, to one file:
one line per body, "<case id> <hex bytes>". The strict-JSON unit tests replay it to check that the
router's scan and the DOM parser give the same verdicts. Bodies over 64 KiB test the size limit, not
JSON, and are left out.

Usage: write_body_corpus.py [OUT]   (default tests/fixtures/strict-json/conformance_bodies.hex)
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_conformance  # noqa: E402


MAX_BODY = 64 * 1024


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "fixtures", "strict-json",
                                                              "conformance_bodies.hex")
    lines = []
    for case in run_conformance.load_cases(os.path.join(HERE, "cases")):
        body, _ = run_conformance.body_of(case)
        if body is not None and len(body) <= MAX_BODY:
            lines.append(f"{case['id']} {body.hex()}\n")
    with open(out, "w", encoding="ascii") as handle:
        handle.writelines(lines)
    print(f"{len(lines)} bodies written to {out}")


if __name__ == "__main__":
    main()
