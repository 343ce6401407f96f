#!/usr/bin/env python3
"""Writes the expected token ids for tests/parity/text/corpus.jsonl using HF `tokenizers`.

Run in a throwaway venv (pip install tokenizers), never inside the repository:
    python tools/reference/make_tokenizer_fixtures.py            # fixtures under tests/parity/text
    python tools/reference/make_tokenizer_fixtures.py --qwen2-tokenizer /tmp/qwen2-tokenizer.json
    python tools/reference/make_tokenizer_fixtures.py --unicode-tables
The first form covers MiniLM (WordPiece) and the tiny Qwen tokenizers (tests/fixtures/qwen-tiny-tokenizer
and its qwen3_5/ variant);
the second adds the real Qwen2 vocab rebuilt from llama.cpp's GGUF (gguf_vocab_to_tokenizer_json.py),
stored as tests/parity/text/qwen2-tokenizer.json.xz, and its Qwen3.5 variant (same vocab and NFC,
Qwen3.5's split pattern), which the C++ test derives from the same file.
The second form regenerates src/text/unicode_tables.inc: the character classes HF's BERT
normaliser and pre-tokeniser actually use (its `unicode_categories` dependency is frozen at an old
Unicode version), and the \p{L}, \p{M}, \p{N} and \s classes of the Oniguruma regex engine behind
HF's Split pre-tokeniser (for the hand-written Qwen split), measured code point by code point so
s1serve matches HF exactly.
"""
import argparse
import json
import lzma
import pathlib
import random

import tokenizers
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = ROOT / "tests/parity/text"
TRUNCATION_LENGTHS = (32, 256)

INVALID_UTF8 = [
    b"\xff", b"abc\x80def", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xf0\x9f\x98",
    b"\xf0\x9f\x98 hi", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf",
    b"caf\xc3\xa9 \xc3", b"[CLS\xff] [SEP]\xfe", b"\xfe\xfe\xff\xff", b"ok\x00\xf8\x88\x80\x80\x80",
    b"\xf0\x9f\x91\x8d\xf0\x9f", b"a\xe3\x80b\xe3\x80\x80c",
]


def encode(tokenizer, text, max_length=None, add_special_tokens=True):
    if max_length:
        tokenizer.enable_truncation(max_length)
    else:
        tokenizer.no_truncation()
    encoding = tokenizer.encode(text, add_special_tokens=add_special_tokens)
    return encoding.ids, bool(encoding.overflowing)


def write_fixtures():
    tokenizer = Tokenizer.from_file(str(TEXT / "minilm/tokenizer.json"))
    tokenizer.no_padding()
    lines = [json.loads(line) for line in (TEXT / "corpus.jsonl").open(encoding="utf-8")]
    with (TEXT / "minilm_expected.jsonl").open("w", encoding="utf-8") as out:
        header = {"tokenizers_version": tokenizers.__version__, "tokenizer": "minilm/tokenizer.json",
                  "corpus": "corpus.jsonl", "lines": len(lines)}
        out.write(json.dumps(header) + "\n")
        for index, text in enumerate(lines):
            ids, _ = encode(tokenizer, text)
            record = {"ids": ids}
            # Truncated and special-free variants only where they say something new, to keep the
            # fixture small.
            for max_length in TRUNCATION_LENGTHS:
                near_limit = max_length - 4 <= len(ids) <= max_length + 4
                if near_limit or (len(ids) > max_length and index % 8 == 0) or index % 50 == 0:
                    truncated_ids, truncated = encode(tokenizer, text, max_length)
                    record[f"max{max_length}"] = {"ids": truncated_ids, "truncated": truncated}
            if index % 10 == 0:
                record["no_special"], _ = encode(tokenizer, text, add_special_tokens=False)
            if index % 20 == 0:
                record["decoded"] = tokenizer.decode(ids, skip_special_tokens=False)
                record["decoded_skip_special"] = tokenizer.decode(ids, skip_special_tokens=True)
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    # Invalid UTF-8 reaches HF as text decoded with U+FFFD replacement (Python's "replace").
    with (TEXT / "minilm_invalid_utf8.jsonl").open("w", encoding="utf-8") as out:
        for raw in INVALID_UTF8:
            ids, _ = encode(tokenizer, raw.decode("utf-8", errors="replace"))
            out.write(json.dumps({"hex": raw.hex(), "ids": ids}) + "\n")
    print(f"wrote fixtures for {len(lines)} lines with tokenizers {tokenizers.__version__}")
    write_bpe_fixtures(Tokenizer.from_file(str(ROOT / "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json")),
                       "qwen_tiny", "../../fixtures/qwen-tiny-tokenizer/tokenizer.json")
    # Every third line for the Qwen3.5 variant keeps the fixture small.
    write_bpe_fixtures(Tokenizer.from_file(str(ROOT / "tests/fixtures/qwen-tiny-tokenizer/qwen3_5/tokenizer.json")),
                       "qwen3_5_tiny", "../../fixtures/qwen-tiny-tokenizer/qwen3_5/tokenizer.json", line_stride=3)


QWEN3_5_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                   r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Cases the byte-level BPE tokenizers meet that the corpus has few of.
BPE_CASES = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\nHello.<|im_end|>\n",
    "<|im_start|><|im_end|><|endoftext|>", "<|im_start|>user<|im_end|>", "<|im_start |>", "<|IM_START|>",
    "a<think>b</think>c", "<think></think>", " <think> ", "<thinking>", "<|endoftext|><|endoftext|>",
    "{\"answer\": \"yes\", \"confidence\": 0.93, \"labels\": [\"A\", \"B\", \"AA\"]}",
    "[{\"role\": \"user\", \"content\": \"x\"}]\n", "{\"nested\": {\"a\": [1, 2, {\"b\": null}]}}",
    " ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\n ", " \n ", "a  b", "a   b", "a \n b", "a\n\n\nb",
    "a\r\nb", "a\r\n\r\n", "x  ", "x   \n", "\u3000x", "x\u00a0\u00a0y", "\t\tdef f():\n\t\treturn 1\n",
    "0", "12", "123", "1234567890", "3.14159", "-42", "1,000,000", "2024-06-11", "v1.2.3", "１２３", "٣٤٥", "Ⅻ",
    "I'm", "you're", "we've", "they'll", "he'd", "it's", "don't", "I'M", "YOU'RE", "'s", "'S", "'ſ", "'sup",
    "O'Neil", "rock'n'roll", "'" * 3, "' s",
    "你好世界", "我们今天去北京。", "日本語のテキスト", "한국어 문장", "中文，标点！", "漢字かなカナ",
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "🏳️‍🌈", "a😀b", " 😀", "😀😀😀",
    "e\u0301", "café", "cafe\u0301", "\u1100\u1161", "\u0041\u030a", "Å", "Å", "ﬁ", "\u0301abc", " \u0301",
    "a\u0308\u0301", "\u0915\u094d\u0937", "Ǆ", "ǅ", "x\u20dd", "\u0e01\u0e33",
    "yes", "no", " yes", " no", "Yes", "NO", "A", "B", "AA", "AZ", "ABC", " A", "A B C", "AAAAAAAA",
    "a" * 300, "ab" * 200, " " * 64, "\n" * 40, "😀" * 50, "9" * 100,
]


def random_cases(count):
    # Random strings over the characters the split pattern tells apart.
    rng = random.Random(20261129)
    pool = (list("aAzZ09 _-'.,!?\"\t\n\r") + ["s", "t", "re", "ve", "ll", "m", "d", "\u0301", "\u0308",
            "\u00e9", "\u4e2d", "\u3000", "\u00a0", "\u2028", "\u0085", "\u0663", "\u2163", "\U0001f600",
            "\u200d", "\ufe0f", "<|im_end|>", "<think>", "\u0915", "\u094d", "\u017f", "\u0130", "\x00", "\x7f"])
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 40))) for _ in range(count)]


def write_bpe_fixtures(tokenizer, name, source, line_stride=1):
    """name_expected.jsonl: header, then {"line", "ids"} for every line_stride-th corpus line,
    {"text", "ids"} per extra case, and {"hex", "ids"} per invalid UTF-8 case; some records also carry
    HF's decode of their ids."""
    lines = [json.loads(line) for line in (TEXT / "corpus.jsonl").open(encoding="utf-8")]
    cases = BPE_CASES + random_cases(300)
    with (TEXT / f"{name}_expected.jsonl").open("w", encoding="utf-8") as out:
        header = {"tokenizers_version": tokenizers.__version__, "tokenizer": source, "corpus": "corpus.jsonl",
                  "lines": len(range(0, len(lines), line_stride)), "cases": len(cases),
                  "invalid_utf8": len(INVALID_UTF8)}
        out.write(json.dumps(header) + "\n")
        for index in range(0, len(lines), line_stride):
            ids = tokenizer.encode(lines[index], add_special_tokens=True).ids
            record = {"line": index, "ids": ids}
            if index % 25 == 0:
                record["decoded"] = tokenizer.decode(ids, skip_special_tokens=False)
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
        for index, text in enumerate(cases):
            ids = tokenizer.encode(text, add_special_tokens=True).ids
            record = {"text": text, "ids": ids, "decoded": tokenizer.decode(ids, skip_special_tokens=False)}
            if index % 3 == 0:
                record["decoded_skip_special"] = tokenizer.decode(ids, skip_special_tokens=True)
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        for raw in INVALID_UTF8:
            ids = tokenizer.encode(raw.decode("utf-8", errors="replace")).ids
            out.write(json.dumps({"hex": raw.hex(), "ids": ids}) + "\n")
    print(f"wrote {name}_expected.jsonl")


def qwen3_5_variant(spec):
    spec = json.loads(json.dumps(spec))
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN3_5_PATTERN
    return spec


def write_real_qwen_fixtures(path):
    text = pathlib.Path(path).read_text(encoding="utf-8")
    compressed = lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
    (TEXT / "qwen2-tokenizer.json.xz").write_bytes(compressed)
    spec = json.loads(text)
    # Every fifth corpus line keeps these two fixtures small; the tiny tokenizer covers every line.
    write_bpe_fixtures(Tokenizer.from_str(text), "qwen2", "qwen2-tokenizer.json.xz", line_stride=5)
    write_bpe_fixtures(Tokenizer.from_str(json.dumps(qwen3_5_variant(spec))), "qwen3_5",
                       "qwen2-tokenizer.json.xz with Qwen3.5's split", line_stride=5)


def ranges(points):
    result = []
    for point in points:
        if result and result[-1][1] + 1 == point:
            result[-1][1] = point
        else:
            result.append([point, point])
    return result


def write_unicode_tables():
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                       strip_accents=False, lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                       strip_accents=True, lowercase=False)
    split = pre_tokenizers.BertPreTokenizer()
    control, punctuation, nonspacing = [], [], []
    for point in range(0x110000):
        if 0xD800 <= point <= 0xDFFF:
            continue
        char = chr(point)
        if point not in (0, 0xFFFD) and clean.normalize_str(char) == "":
            control.append(point)
        if len(split.pre_tokenize_str("a" + char + "b")) == 3:
            punctuation.append(point)
        # After NFD only undecomposable characters remain, so "stripped to nothing" is exactly
        # the nonspacing-mark test HF applies.
        if strip.normalize_str(char) == "":
            nonspacing.append(point)
    tables = {"kBertControlRanges": control, "kBertPunctuationRanges": punctuation,
              "kNonspacingMarkRanges": nonspacing}
    # One Split call per class over a string of every code point: what the regex removes is the class.
    everything = "".join(chr(point) for point in range(0x110000) if not 0xD800 <= point <= 0xDFFF)
    for name, pattern in (("kRegexLetterRanges", r"\p{L}"), ("kRegexMarkRanges", r"\p{M}"),
                          ("kRegexNumberRanges", r"\p{N}"), ("kRegexSpaceRanges", r"\s")):
        kept = set()
        for piece, _ in pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(everything):
            kept.update(piece)
        tables[name] = [ord(char) for char in everything if char not in kept]
    out = [f"// Generated by tools/reference/make_tokenizer_fixtures.py --unicode-tables from HF tokenizers "
           f"{tokenizers.__version__}; do not edit.",
           "// Inclusive code point ranges, sorted; see the script for how each class is measured."]
    for name, points in tables.items():
        out.append(f"constexpr CodePointRange {name}[] = {{")
        items = [f"{{0x{a:X}, 0x{b:X}}}" for a, b in ranges(points)]
        for start in range(0, len(items), 6):
            out.append("    " + ", ".join(items[start:start + 6]) + ",")
        out.append("};")
    (ROOT / "src/text/unicode_tables.inc").write_text("\n".join(out) + "\n", encoding="utf-8")
    print("wrote src/text/unicode_tables.inc", {k: len(ranges(v)) for k, v in tables.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unicode-tables", action="store_true")
    parser.add_argument("--qwen2-tokenizer", help="tokenizer.json rebuilt by gguf_vocab_to_tokenizer_json.py")
    arguments = parser.parse_args()
    if arguments.unicode_tables:
        write_unicode_tables()
    elif arguments.qwen2_tokenizer:
        write_real_qwen_fixtures(arguments.qwen2_tokenizer)
    else:
        write_fixtures()


if __name__ == "__main__":
    main()
