#!/usr/bin/env python3
"""Builds tests/fixtures/gguf/decision/: one tiny GGUF stand-in per decision type s1serve serves,
and the answers the Python reference of each type's maths gives for tests/e2e/gguf_decision_requests.jsonl.

tiny-qwen3-<type>.gguf is tests/fixtures/gguf/tiny-qwen3.gguf (tests/fixtures/tiny-qwen3-chat under
llama.cpp's names, BF16) plus the decision keys llama.cpp's server reads: qwen3.decision.type,
qwen3.decision.temperature.* and a tokenizer.chat_template.systemone prompt written for the
stand-in in the shape of that type's input (the real models' templates are in their own GGUFs).
tiny-lfm2-lfm2-d1.gguf is the lfm2-d1 stand-in on LFM2's own architecture:
tests/fixtures/gguf/converted/tiny-lfm2-f32.gguf (llama.cpp's converter's output for
tests/fixtures/tiny-lfm2, tools/reference/make_gguf_converter_fixtures.py) with the same keys under
lfm2.decision.*.
expected.json: per stand-in, per request, what tools/reference/gguf_decision_contract.py answers
with the Transformers fp32 forward of the directory the GGUF was made from (the same weights).

Deterministic. Run:  python3 tools/reference/make_gguf_decision_fixtures.py
"""
import json
import pathlib
import sys

import gguf

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gguf_decision_contract import GgufDecisionReference  # noqa: E402
from make_gguf_fixtures import write_tiny_qwen3  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/gguf/decision"
REQUESTS = ROOT / "tests/e2e/gguf_decision_requests.jsonl"
MODEL_DIR = ROOT / "tests/fixtures/tiny-qwen3-chat"

# Written once for every type: the description of an option is text or JSON.
DESCRIPTION = ("{% if option.description is string %} - {{ option.description }}"
               "{% elif option.description is not none %} - {{ option.description | tojson }}{% endif %}")
STATE = "{% if state is string %}{{ state }}{% else %}{{ state | tojson }}{% endif %}"
USER = "<|im_start|>user\n"
ASSISTANT = "<|im_end|>\n<|im_start|>assistant\n"

TEMPLATES = {
    # The options are lettered by the template (A.., then a..), as Open-Jev's prompt does.
    "openjev": (USER + STATE + "\n\n{% if instructions is not none %}Question: {{ instructions }}\n{% endif %}"
                "{% for option in options %}{{ 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[loop.index0] }}: "
                "{{ option.key }}" + DESCRIPTION + "\n{% endfor %}Answer with one letter." + ASSISTANT),
    "lev": (USER + "{{ state | tojson }}\n{{ type }}: {{ instructions }}\n"
            "{% for option in options %}[{{ option.label }}] {{ option.key }}" + DESCRIPTION + "\n{% endfor %}"
            "{% if type == 'noul' %}Rate from A (no) to I (yes).{% else %}Answer with a label.{% endif %}" + ASSISTANT),
    "nimble": (USER + STATE + "\nAll questions:{% for q in questions %} {{ q.id }} ({{ q.type }}, "
               "{{ q.options | length }} options){% endfor %}\nNow {{ id }}: {{ instructions }}\n"
               "{% for option in options %}{{ option.label }}) {{ option.key }}" + DESCRIPTION + "\n{% endfor %}"
               + ASSISTANT),
    "pplx-decider": ("<|im_start|>system\nYou decide.<|im_end|>\n" + USER + STATE + "\n---\n{{ instructions }}\n"
                     "{% for option in options %}{{ option.label }}. {{ option.key }}" + DESCRIPTION + "\n{% endfor %}"
                     + ASSISTANT),
    "lfm2-d1": (USER + STATE + "\n\n{{ instructions }}\n{% for option in options %}{{ option.label }}: "
                "{{ option.key }}" + DESCRIPTION + "\n{% endfor %}"
                "{% if type == 'noul' %}Answer yes or no.{% else %}Answer with a label.{% endif %}" + ASSISTANT),
}

# Temperatures exercise the bucketed key, the question type's key and the default of 1.
TEMPERATURES = {
    "openjev": {"choice.3_5": 0.5, "noul": 2.0},
    "lev": {"choice.small": 0.7, "noul": 1.5},
    "nimble": {"score": 0.8},
    "pplx-decider": {},
    "lfm2-d1": {"choice": 0.9, "score.3_5": 1.25},
}


def decision_keys(kind, arch="qwen3"):
    def add(writer):
        writer.add_string(arch + ".decision.type", kind)
        for name, value in TEMPERATURES[kind].items():
            writer.add_float32(arch + ".decision.temperature." + name, value)
        writer.add_string("tokenizer.chat_template.systemone", TEMPLATES[kind])
    return add


def copy_gguf(source, target, add_keys):
    """`source` rewritten by the gguf package with add_keys(writer) after its own metadata."""
    reader = gguf.GGUFReader(str(source))
    writer = gguf.GGUFWriter(str(target), arch=reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), field.types[0], sub)
    add_keys(writer)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, tensor.data, raw_shape=tensor.data.shape, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    requests = [json.loads(line) for line in REQUESTS.read_text().splitlines() if line.strip()]
    expected = {}
    for kind in TEMPLATES:
        path = OUT / f"tiny-qwen3-{kind}.gguf"
        write_tiny_qwen3(path, add_keys=decision_keys(kind))
        reference = GgufDecisionReference(str(path), str(MODEL_DIR))
        expected[kind] = [reference.decide(request) for request in requests]
    path = OUT / "tiny-lfm2-lfm2-d1.gguf"
    copy_gguf(ROOT / "tests/fixtures/gguf/converted/tiny-lfm2-f32.gguf", path, decision_keys("lfm2-d1", "lfm2"))
    reference = GgufDecisionReference(str(path), str(ROOT / "tests/fixtures/tiny-lfm2"))
    expected["lfm2/lfm2-d1"] = [reference.decide(request) for request in requests]
    with open(OUT / "expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
