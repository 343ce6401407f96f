#!/usr/bin/env python3
"""End to end: `s1serve quantize` writes GGUF files that llama.cpp's tools and our loader read, and
that serve with quantised matmuls close to the checkpoint they came from.

1. tests/fixtures/tiny-qwen3-chat quantised to q8_0 is byte for byte
   tests/fixtures/gguf/tiny-qwen3-q8_0.gguf, which the gguf package wrote (its writer, its Q8_0
   quantiser, convert_hf_to_gguf.py's keys and vocabulary arrays: tools/reference/make_gguf_fixtures.py),
   and its decision file is copied beside it. Where the gguf package is installed its reader also
   reads both files' tensors.
2. The same fixture quantised to q4_k: its rows (64 and 96 values) are not whole Q4_K blocks, so
   every matrix is Q5_0, as llama.cpp's quantizer writes such tensors, and the command says so for
   each.
3. A Qwen3 checkpoint whose rows are whole Q4_K blocks (hidden 256, random weights, made here) is
   quantised to q4_k: its matrices are Q4_K in the file.
4. The same fixture quantised to q8_0 with --decision-type lev and the lev stand-in's prompt and
   temperatures (read from tests/fixtures/gguf/decision/tiny-qwen3-lev.gguf), and
   tests/fixtures/tiny-lfm2 (the LFM2 family) likewise with tiny-lfm2-lfm2-d1.gguf's lfm2-d1 keys,
   carry the same decision keys as their stand-ins and serve as those types:
   tests/e2e/gguf_decision_requests.jsonl gets the input_tokens of expected.json and probabilities
   within MAX_DRIFT of them (the stand-ins hold the same weights unquantised).
5. Both GGUFs of 1 and 3 are served (Q8_0 and Q4_K weights kept quantised, activations quantised to int8 per
   block) beside fp32 directories: the q8_0 one beside the checkpoint it came from, the q4_k one
   beside its own weights dequantised (by the plain reference below; Q4_K's own error on random
   weights moves near-uniform answers by up to 0.2, which would hide a kernel bug). Every request of
   tests/e2e/decoder_requests.jsonl must answer with probabilities within MAX_DRIFT of the
   directory's; the largest drift is printed.

    python3 tests/e2e/quantize_e2e.py --binary build/s1serve
"""

from __future__ import annotations

import argparse
import array
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))

import s1harness  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "tiny-qwen3-chat")
MAX_DRIFT = 0.05
GGML_Q5_0, GGML_Q8_0, GGML_Q4_K = 6, 8, 12


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def quantize(binary, model, kind, out, extra=()):
    done = subprocess.run([binary, "quantize", "--model", model, "--type", kind, "--out", out, *extra],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"quantize {model} {kind}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def write_safetensors(path, tensors):
    """name → (shape, list of floats), as F32."""
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = array.array("f", values).tobytes()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def make_q4_k_checkpoint(directory):
    """The tiny fixture's tokenizer and config, widened so that every matrix row is whole Q4_K blocks."""
    os.makedirs(directory)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(FIXTURE, name), os.path.join(directory, name))
    config = json.load(open(os.path.join(FIXTURE, "config.json")))
    hidden, inner, heads, kv_heads, head_dim = 256, 512, 4, 2, 64
    config.update(hidden_size=hidden, intermediate_size=inner, num_attention_heads=heads,
                  num_key_value_heads=kv_heads, head_dim=head_dim, num_hidden_layers=1, dtype="float32",
                  layer_types=["full_attention"])
    json.dump(config, open(os.path.join(directory, "config.json"), "w"))
    json.dump({"contract": "label-token", "name": "wide-qwen3", "precision": "fp32"},
              open(os.path.join(directory, "s1serve.json"), "w"))
    generator = random.Random(22)

    def normal(*shape, scale=0.05):
        count = 1
        for dim in shape:
            count *= dim
        return list(shape), [generator.gauss(0.0, scale) for _ in range(count)]

    def ones(width):
        return [width], [1.0] * width

    p = "model.layers.0."
    write_safetensors(os.path.join(directory, "model.safetensors"), {
        "model.embed_tokens.weight": normal(config["vocab_size"], hidden, scale=0.05),
        "model.norm.weight": ones(hidden),
        p + "input_layernorm.weight": ones(hidden),
        p + "post_attention_layernorm.weight": ones(hidden),
        p + "self_attn.q_proj.weight": normal(heads * head_dim, hidden),
        p + "self_attn.k_proj.weight": normal(kv_heads * head_dim, hidden),
        p + "self_attn.v_proj.weight": normal(kv_heads * head_dim, hidden),
        p + "self_attn.o_proj.weight": normal(hidden, heads * head_dim),
        p + "self_attn.q_norm.weight": ones(head_dim),
        p + "self_attn.k_norm.weight": ones(head_dim),
        p + "mlp.gate_proj.weight": normal(inner, hidden),
        p + "mlp.up_proj.weight": normal(inner, hidden),
        p + "mlp.down_proj.weight": normal(hidden, inner),
    })


def read_gguf_metadata(path):
    """key → value for the string, float32 and uint32 keys (the decision keys' types)."""
    data = open(path, "rb").read()
    _, _, _, kv_count = struct.unpack_from("<IIQQ", data, 0)
    at, values = 24, {}
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(at):
        (length,) = struct.unpack_from("<Q", data, at)
        return data[at + 8:at + 8 + length].decode(), at + 8 + length

    def skip(kind, at):
        if kind == 8:
            return string(at)[1]
        if kind == 9:
            inner, count = struct.unpack_from("<IQ", data, at)
            at += 12
            for _ in range(count):
                at = skip(inner, at)
            return at
        return at + sizes[kind]

    for _ in range(kv_count):
        key, at = string(at)
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        if kind == 8:
            values[key], at = string(at)
        elif kind == 6:
            values[key] = struct.unpack_from("<f", data, at)[0]
            at += 4
        else:
            at = skip(kind, at)
    return values


def decision_keys(metadata):
    return {key: value for key, value in metadata.items()
            if ".decision." in key or key == "tokenizer.chat_template.systemone"}


def read_gguf_tensors(path):
    """name → (ggml type id, shape outermost first, bytes), from our own small reader of the file."""
    data = open(path, "rb").read()

    def string(at):
        (length,) = struct.unpack_from("<Q", data, at)
        return data[at + 8:at + 8 + length].decode(), at + 8 + length

    def skip_value(kind, at):
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        if kind == 8:
            return string(at)[1]
        if kind == 9:
            inner, count = struct.unpack_from("<IQ", data, at)
            at += 12
            for _ in range(count):
                at = skip_value(inner, at)
            return at
        return at + sizes[kind]

    _, _, tensor_count, kv_count = struct.unpack_from("<IIQQ", data, 0)
    at = 24
    for _ in range(kv_count):
        _, at = string(at)
        (kind,) = struct.unpack_from("<I", data, at)
        at = skip_value(kind, at + 4)
    directory = []
    for _ in range(tensor_count):
        name, at = string(at)
        (dims,) = struct.unpack_from("<I", data, at)
        shape = list(struct.unpack_from(f"<{dims}Q", data, at + 4))[::-1]
        at += 4 + 8 * dims
        kind, offset = struct.unpack_from("<IQ", data, at)
        at += 12
        directory.append((name, kind, shape, offset))
    base = (at + 31) // 32 * 32
    tensors = {}
    for index, (name, kind, shape, offset) in enumerate(directory):
        end = directory[index + 1][3] if index + 1 < len(directory) else len(data) - base
        tensors[name] = (kind, shape, data[base + offset:base + end])
    return tensors


def half(bits):
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def dequantize_q4_k(raw, count):
    """ggml's dequantize_row_q4_K, written out plainly (the reference the kernels are checked against)."""
    out = []
    for block in range(count // 256):
        b = raw[block * 144:(block + 1) * 144]
        d, dmin = half(b[0] | b[1] << 8), half(b[2] | b[3] << 8)
        scales, qs = b[4:16], b[16:144]
        for chunk in range(8):
            if chunk < 4:
                sc, m = scales[chunk] & 63, scales[chunk + 4] & 63
            else:
                sc = (scales[chunk + 4] & 0xF) | ((scales[chunk - 4] >> 6) << 4)
                m = (scales[chunk + 4] >> 4) | ((scales[chunk] >> 6) << 4)
            q = qs[32 * (chunk // 2):32 * (chunk // 2) + 32]
            shift = 4 * (chunk % 2)
            out += [d * sc * ((v >> shift) & 0xF) - dmin * m for v in q]
    return out


def dequantized_directory(gguf_file, source, directory, name):
    """The Q4_K GGUF's weights, dequantised, as an F32 checkpoint under our names (same config)."""
    os.makedirs(directory)
    for file in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(source, file), os.path.join(directory, file))
    json.dump({"contract": "label-token", "name": name, "precision": "fp32"},
              open(os.path.join(directory, "s1serve.json"), "w"))
    ours = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
            "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
            "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm", "ffn_gate": "mlp.gate_proj",
            "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    tensors = {}
    for gguf_name, (kind, shape, raw) in read_gguf_tensors(gguf_file).items():
        count = 1
        for dim in shape:
            count *= dim
        if gguf_name == "token_embd.weight":
            name_ours = "model.embed_tokens.weight"
        elif gguf_name == "output_norm.weight":
            name_ours = "model.norm.weight"
        else:
            _, layer, stem, _ = gguf_name.split(".")
            name_ours = f"model.layers.{layer}.{ours[stem]}.weight"
        values = dequantize_q4_k(raw, count) if kind == GGML_Q4_K else list(array.array("f", raw[:4 * count]))
        tensors[name_ours] = (shape, values)
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors)


def answers(server, request, model, where, problems):
    response = s1harness.request(server, "POST", "/v1/systemone", json_body=dict(request, model=model), timeout=60.0)
    if response.status != 200:
        problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
        return None
    return response.json()["answers"]


def probabilities(answer):
    if answer["type"] == "noul":
        return {"true": answer["noul"]}
    return answer["probabilities"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    problems = []
    work = tempfile.mkdtemp(prefix="s1-quantize-e2e-")
    try:
        q8 = os.path.join(work, "tiny-q8.gguf")
        quantize(args.binary, FIXTURE, "q8_0", q8)
        expected = os.path.join(ROOT, "tests", "fixtures", "gguf", "tiny-qwen3-q8_0.gguf")
        if open(q8, "rb").read() != open(expected, "rb").read():
            problems.append(f"q8_0: {q8} differs from the gguf package's {expected}")
        if not os.path.exists(os.path.join(work, "tiny-q8.s1serve.json")):
            problems.append("q8_0: the decision file was not written beside the GGUF")
        try:
            import gguf  # the package's own reader, where it is installed (not in CI)
            reader = gguf.GGUFReader(q8)
            if reader.fields["general.architecture"].contents() != "qwen3" or len(reader.tensors) != 24:
                problems.append("q8_0: the gguf package reads another architecture or tensor count")
        except ImportError:
            print("gguf package not installed: byte equality with its own file stands for its reader")

        narrow = os.path.join(work, "tiny-q4.gguf")
        said = quantize(args.binary, FIXTURE, "q4_k", narrow)
        types = {name: kind for name, (kind, _, _) in read_gguf_tensors(narrow).items()}
        matrices = [name for name in types if not name.endswith("norm.weight")]
        if any(types[name] != GGML_Q5_0 for name in matrices) or len(matrices) != 15:
            problems.append(f"q4_k of 64-value rows: matrix types {types}")
        for name in matrices:
            if f"{name}: rows of " not in said or "written as Q5_0" not in said:
                problems.append(f"q4_k of 64-value rows: the output does not say {name} fell back: {said!r}")

        # (fixture, architecture, stand-in stem, expected.json key, served name)
        decision_cases = [(FIXTURE, "qwen3", "tiny-qwen3-lev", "lev", "tiny-lev-q8"),
                          (os.path.join(ROOT, "tests", "fixtures", "tiny-lfm2"), "lfm2", "tiny-lfm2-lfm2-d1",
                           "lfm2/lfm2-d1", "tiny-lfm2-d1-q8")]
        decision_files = []
        for source, arch, stem, _, served in decision_cases:
            stand_in = decision_keys(read_gguf_metadata(
                os.path.join(ROOT, "tests", "fixtures", "gguf", "decision", stem + ".gguf")))
            prompt = os.path.join(work, served + ".jinja")
            with open(prompt, "w", encoding="utf-8") as f:
                f.write(stand_in["tokenizer.chat_template.systemone"])
            prefix = arch + ".decision.temperature."
            flags = ["--decision-type", stand_in[arch + ".decision.type"], "--decision-template", prompt]
            for key, value in stand_in.items():
                if key.startswith(prefix):
                    flags += ["--decision-temperature", f"{key[len(prefix):]}={value!r}"]
            path = os.path.join(work, served + ".gguf")
            quantize(args.binary, source, "q8_0", path, flags)
            if decision_keys(read_gguf_metadata(path)) != stand_in:
                problems.append(f"{served}: decision keys {decision_keys(read_gguf_metadata(path))} vs the stand-in's")
            if os.path.exists(os.path.join(work, served + ".s1serve.json")):
                problems.append(f"{served}: a label-token decision file was written beside a decision-type GGUF")
            decision_files.append(path)

        wide = os.path.join(work, "wide-qwen3")
        make_q4_k_checkpoint(wide)
        q4 = os.path.join(work, "wide-q4.gguf")
        quantize(args.binary, wide, "q4_k", q4)
        types = {name: kind for name, (kind, _, _) in read_gguf_tensors(q4).items()}
        matrices = [name for name in types if not name.endswith("norm.weight")]
        if any(types[name] != GGML_Q4_K for name in matrices) or len(matrices) != 8:
            problems.append(f"q4_k: matrix types {types}")
        dequantized = os.path.join(work, "wide-q4-dequantized")
        dequantized_directory(q4, wide, dequantized, "wide-q4-dequantized")
        with open(os.path.join(work, "wide-q4.s1serve.json"), "w") as f:
            json.dump({"contract": "label-token", "name": "wide-q4", "precision": "fp32"}, f)
        with open(os.path.join(work, "tiny-q8.s1serve.json"), "w") as f:
            json.dump({"contract": "label-token", "name": "tiny-q8", "precision": "fp32"}, f)

        decision_expected = json.load(open(os.path.join(ROOT, "tests", "fixtures", "gguf", "decision", "expected.json")))
        decision_requests = read_jsonl(os.path.join(HERE, "gguf_decision_requests.jsonl"))
        served_files = []
        for (_, _, _, _, served), path in zip(decision_cases, decision_files):
            with open(os.path.join(work, served + ".s1serve.json"), "w") as f:
                json.dump({"name": served, "precision": "fp32"}, f)
            served_files += ["--model", path]
        worst_decision = {served: 0.0 for *_, served in decision_cases}
        with s1harness.Server(args.binary, served_files + ["--port", "0"], name="quantize-decision") as server:
            for _, _, _, key_expected, served in decision_cases:
                for number, request in enumerate(decision_requests):
                    where = f"{served} request {number}"
                    response = s1harness.request(server, "POST", "/v1/systemone",
                                                 json_body=dict(request, model=served), timeout=60.0)
                    want = decision_expected[key_expected][number]
                    if response.status != 200:
                        problems.append(f"{where}: status {response.status}: {response.body[:300]!r}")
                        continue
                    body = response.json()
                    if body["usage"]["input_tokens"] != want["input_tokens"]:
                        problems.append(f"{where}: input_tokens {body['usage']['input_tokens']}, "
                                        f"expected {want['input_tokens']}")
                    for key, answer in want["answers"].items():
                        for label, p in probabilities(answer).items():
                            drift = abs(probabilities(body["answers"][key]).get(label, -1.0) - p)
                            worst_decision[served] = max(worst_decision[served], drift)
                            if drift > MAX_DRIFT:
                                problems.append(f"{where}/{key}: p[{label}] drifts {drift:.4f}")
        print(f"decision types at q8_0: largest probability drift from the stand-ins' references: {worst_decision}")

        directory_name = json.load(open(os.path.join(FIXTURE, "s1serve.json")))["name"]
        requests = read_jsonl(os.path.join(HERE, "decoder_requests.jsonl"))
        worst = {"tiny-q8": 0.0, "wide-q4": 0.0}
        with s1harness.Server(args.binary, ["--model", FIXTURE, "--model", q8, "--model", dequantized,
                                            "--model", q4, "--port", "0"], name="quantize") as server:
            for number, request in enumerate(requests):
                for quantized, source in (("tiny-q8", directory_name), ("wide-q4", "wide-q4-dequantized")):
                    where = f"request {number} ({quantized})"
                    want = answers(server, request, source, where + " directory", problems)
                    got = answers(server, request, quantized, where, problems)
                    if not want or not got:
                        continue
                    for key, answer in want.items():
                        for label, p in probabilities(answer).items():
                            drift = abs(probabilities(got[key]).get(label, -1.0) - p)
                            worst[quantized] = max(worst[quantized], drift)
                            if drift > MAX_DRIFT:
                                problems.append(f"{where}/{key}: p[{label}] drifts {drift:.4f}")
        print(f"largest probability drift from fp32: {worst}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for problem in problems:
        print("FAIL:", problem)
    print(f"quantize e2e: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
