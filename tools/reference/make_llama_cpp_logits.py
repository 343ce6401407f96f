#!/usr/bin/env python3
"""Builds the llama.cpp references of the quantised-GGUF parity tests (issue 22 item 5): llama.cpp's
own evaluation (llama-cpp-python, logits_all) of tiny GGUFs of tests/fixtures/tiny-qwen3-chat.

tests/fixtures/gguf/tiny-qwen3-q4_k.gguf   `s1serve quantize --type q4_k` of the fixture (its rows of
                                           64 and 96 values are not whole Q4_K blocks: every matrix is
                                           Q5_0, as llama.cpp's quantizer writes them)
tests/fixtures/gguf/llama_cpp/tiny-qwen3-logits.gguf
    metadata s1test.ids (the token ids evaluated) and s1test.llama_cpp_python (its version); one F32
    tensor [positions, vocab] of every position's logits per evaluated file:
      f32   gguf/converted/tiny-qwen3-f32.gguf (llama.cpp's converter, --outtype f32)
      q8_0  gguf/tiny-qwen3-q8_0.gguf (the gguf package's Q8_0 quantiser; byte for byte `s1serve
            quantize --type q8_0`)
      q4_k  gguf/tiny-qwen3-q4_k.gguf

llama.cpp runs on one thread with an F32 KV cache and without its extra buffer types
(use_extra_bufts = false): the plain ggml CPU kernels. With them, llama-cpp-python 0.3.36 built with GGML_NATIVE on an AMX Xeon
crashes (SIGSEGV) evaluating the Q8_0 file (its AMX repacked path at these tiny shapes). No BF16
file: gguf/tiny-qwen3.gguf keeps its norm vectors BF16, which ggml's CPU multiply does not take
("binary_op: unsupported types: dst: f32, src0: f32, src1: bf16").

    pip install llama-cpp-python   # builds llama.cpp from source
    python3 tools/reference/make_llama_cpp_logits.py --binary build/release/s1serve

Needs llama-cpp-python, gguf and numpy; CI reads only the committed files.
"""

import argparse
import pathlib
import shutil
import subprocess
import tempfile

import gguf
import llama_cpp
import llama_cpp.llama as llama_module
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures"
GGUF = FIXTURES / "gguf"
# The ids the Qwen3 GGUF parity tests evaluate: specials, merges and plain bytes of the tiny vocab.
# ggml's type id of F32: llama.cpp's KV cache is F16 unless told, which moves fp32 logits by ~5e-4.
GGML_TYPE_F32 = 0
IDS = [3030, 12, 500, 7, 2999, 41, 3031, 8, 3033]


def quantize_q4_k(binary):
    with tempfile.TemporaryDirectory() as work:
        out = pathlib.Path(work) / "tiny-qwen3-q4_k.gguf"
        subprocess.run([binary, "quantize", "--model", str(FIXTURES / "tiny-qwen3-chat"), "--type", "q4_k",
                        "--out", str(out)], check=True, capture_output=True)
        shutil.copyfile(out, GGUF / "tiny-qwen3-q4_k.gguf")


def plain_cpu_params():
    params = original_default_params()
    params.use_extra_bufts = False
    return params


original_default_params = llama_cpp.llama_model_default_params


def llama_cpp_logits(path):
    llama_module.llama_cpp.llama_model_default_params = plain_cpu_params
    model = llama_module.Llama(model_path=str(path), logits_all=True, n_ctx=64, n_batch=64, n_threads=1,
                               n_threads_batch=1, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, verbose=False)
    model.eval(IDS)
    return np.array(model.scores[:len(IDS)], dtype=np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True, help="s1serve, for the q4_k file")
    args = parser.parse_args()
    quantize_q4_k(args.binary)
    out = GGUF / "llama_cpp" / "tiny-qwen3-logits.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(out), arch="s1test")
    writer.add_array("s1test.ids", IDS)
    writer.add_string("s1test.llama_cpp_python", llama_cpp.__version__)
    for name, file in (("f32", GGUF / "converted/tiny-qwen3-f32.gguf"), ("q8_0", GGUF / "tiny-qwen3-q8_0.gguf"), ("q4_k", GGUF / "tiny-qwen3-q4_k.gguf")):
        writer.add_tensor(name, llama_cpp_logits(file))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
