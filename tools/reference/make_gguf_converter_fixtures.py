#!/usr/bin/env python3
"""Builds tests/fixtures/gguf/converted/: our tiny Hugging Face fixtures converted to F32 GGUF by
llama.cpp's own converter, for the parity tests that hold them to the safetensors path.

The converter is vendor/llama.cpp/convert_hf_to_gguf.py (with its conversion/ package and gguf-py)
from the llama-cpp-python source distribution on PyPI, fetched by pip into a temporary folder and
run from there, never vendored here:

    pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all:

One change to the converter's behaviour, made in the running process: get_vocab_base_pre() names
the pre-tokeniser by hashing the tokenizer's output on a test text against the released models'
hashes, and our tiny tokenizers (trained for the tests, with the released models' split patterns)
are not among them, so it is told the name of the split pattern each one has: qwen2 for Qwen3 and
for LFM2 (tiny-lfm2 carries the tiny Qwen tokenizer, not LFM2's own, whose llama.cpp name is lfm2),
qwen35 for Qwen3.5. Qwen3.5 is converted with --no-mtp (the tiny fixture has no MTP layers).

Run:  python3 tools/reference/make_gguf_converter_fixtures.py [--sdist llama_cpp_python-0.3.36.tar.gz]
"""
import argparse
import pathlib
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/gguf/converted"
VERSION = "0.3.36"

# fixture directory → (output file, pre-tokeniser name, extra converter arguments)
MODELS = {
    "tiny-qwen3-chat": ("tiny-qwen3-f32.gguf", "qwen2", []),
    "tiny-qwen3_5-chat": ("tiny-qwen35-f32.gguf", "qwen35", ["--no-mtp"]),
    "tiny-lfm2": ("tiny-lfm2-f32.gguf", "qwen2", []),
}

# Runs the converter's __main__ with get_vocab_base_pre answering argv[2].
BOOTSTRAP = """
import runpy, sys
root, pre = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv = [root + "/convert_hf_to_gguf.py"] + sys.argv[3:]
runpy.run_path(root + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def extract_converter(sdist, work):
    prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
    wanted = (prefix + "convert_hf_to_gguf.py", prefix + "conversion/", prefix + "gguf-py/")
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(wanted)]
        archive.extractall(work, members=members, filter="data")
    return pathlib.Path(work) / prefix


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", help="llama-cpp-python's sdist; downloaded with pip when not given")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="s1-llama-cpp-") as work:
        sdist = args.sdist
        if sdist is None:
            subprocess.run([sys.executable, "-m", "pip", "download", f"llama-cpp-python=={VERSION}", "--no-deps",
                            "--no-binary", ":all:", "-d", work], check=True)
            sdist = str(pathlib.Path(work) / f"llama_cpp_python-{VERSION}.tar.gz")
        root = extract_converter(sdist, work)
        for fixture, (name, pre, extra) in MODELS.items():
            subprocess.run([sys.executable, "-c", BOOTSTRAP, str(root), pre, str(ROOT / "tests/fixtures" / fixture),
                            "--outtype", "f32", "--outfile", str(OUT / name)] + extra, check=True)


if __name__ == "__main__":
    main()
