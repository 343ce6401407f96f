#!/usr/bin/env python3
"""Builds the llama.cpp reference of the GGUF "lfm2" pre-tokeniser test: llama.cpp's own tokenizer
(llama-cpp-python, vocab only) on every line of tests/parity/text/corpus.jsonl.

tests/fixtures/gguf/llama_cpp/tiny-lfm2-vocab.gguf
    tests/fixtures/gguf/tiny-qwen3.gguf's metadata (the tiny byte-level BPE vocabulary, model
    gpt2) with tokenizer.ggml.pre "lfm2" and no tensors: llama.cpp runs it with its LLAMA3
    pre-tokeniser regex (\\p{N}{1,3} digit runs), ignore_merges and no normalisation.
tests/fixtures/gguf/llama_cpp/tiny-lfm2-vocab-tokens.json
    {"llama_cpp_python": version, "ids": [[...] per corpus line]}, tokenised without BOS (the
    file's add_bos_token is false) and with special tokens parsed, as Transformers does.

    pip install llama-cpp-python
    python3 tools/reference/make_llama_cpp_tokens.py

Needs llama-cpp-python and gguf; CI reads only the committed files.
"""

import json
import pathlib

import gguf
import llama_cpp

ROOT = pathlib.Path(__file__).resolve().parents[2]
GGUF = ROOT / "tests/fixtures/gguf"
OUT = GGUF / "llama_cpp"


def write_vocab(path):
    reader = gguf.GGUFReader(str(GGUF / "tiny-qwen3.gguf"))
    writer = gguf.GGUFWriter(str(path), arch=reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = "lfm2" if name == "tokenizer.ggml.pre" else field.contents()
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, kind, sub)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    vocab = OUT / "tiny-lfm2-vocab.gguf"
    write_vocab(vocab)
    model = llama_cpp.Llama(model_path=str(vocab), vocab_only=True, verbose=False)
    texts = [json.loads(line) for line in (ROOT / "tests/parity/text/corpus.jsonl").read_text().splitlines() if line]
    ids = [model.tokenize(text.encode("utf-8", "surrogatepass"), add_bos=False, special=True) for text in texts]
    (OUT / "tiny-lfm2-vocab-tokens.json").write_text(
        json.dumps({"llama_cpp_python": llama_cpp.__version__, "ids": ids}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
