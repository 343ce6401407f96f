#!/usr/bin/env python3
"""Writes tests/parity/text/corpus.jsonl: one JSON string per line, deterministic (seeded).

The corpus exercises the text pipeline where tokenizers usually diverge: accents (composed and
decomposed), scripts, CJK, emoji sequences, odd whitespace, control characters, very long words,
special-token spellings, JSON and code, plus sweeps over code-point ranges so every Unicode
category table is touched. Standard library only.
"""
import json
import pathlib
import random

SEED = 20240611
OUT = pathlib.Path(__file__).resolve().parents[2] / "tests/parity/text/corpus.jsonl"

WORDS = ("the quick brown fox jumps over lazy dog request model decision server token latency "
         "budget queue batch answer question candidate user agent click button window screen "
         "tokenizer normalisation unbelievable reinforcement transformers embeddings running "
         "jumped happily internationalization unaffable antidisestablishmentarianism").split()
SUBJECTS = ["Login fails", "Payment declined", "App crashes on start", "Slow dashboard",
            "Refund request", "Password reset email missing", "Export to CSV broken"]
ACCENTED = ["café", "naïve", "résumé", "Ångström", "Straße", "crème brûlée", "façade", "Zürich",
            "São Paulo", "İstanbul", "Łódź", "Dvořák", "Ærøskøbing", "ﬁnance", "Ǆemal", "Ωmega"]
SCRIPTS = ["Καλημέρα κόσμε, ΣΊΣΥΦΟΣ ς", "Привет, мир! Ёлка и ЙОД", "مرحبا بالعالم، كيف حالك؟",
           "שלום עולם, מה נשמע?", "नमस्ते दुनिया। क्या हाल है?", "你好，世界！我们今天去北京。",
           "こんにちは、世界。カタカナとひらがな", "안녕하세요 세계! 한국어 문장입니다.",
           "สวัสดีชาวโลก", "გამარჯობა მსოფლიო", "Բարեւ աշխարհ", "ሰላም ልዑል", "ᚠᚢᚦᚨᚱᚲ",
           "𠀀𠀁𪜀 𫝀 𬺰 𰀀 丽", "Ελληνικά: ά έ ή ί ό ύ ώ ΐ ΰ", "ﾊﾝｶｸ ｶﾀｶﾅ ＡＢＣ１２３"]
EMOJI = ["😀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "🏳️‍🌈", "❤️", "🥰", "🫠", "1️⃣", "🧑🏿‍🚀",
         "☺", "✔", "⚠️", "🤷‍♀️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]
SPACES = ["\t", "  ", "   ", "\u00a0", "\u3000", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",
          "\u2028", "\u2029", "\u0085", "\u1680", "\u2003", "\u202f", "\n", "\r\n", "\x0b", "\x0c"]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x9f", "\u00ad", "\u200e", "\u202e",
            "\ufffd", "\ue000", "\U000f0000", "\U000e0001", "\u0378", "\U0010ffff", "\ufffe"]
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "[ SEP ]", "[CLS][SEP]",
            "[[MASK]]", "CLS", "[CLS", "SEP]", "##ing", "[unused0]"]
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»–—…‘’“”•‰′″‹›€£¥§¶·。、「」『』【】！？：；（）"


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sentence(rng):
    text = words(rng, rng.randint(3, 18))
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", "", "..."])


def ticket(rng):
    number = rng.randint(1000, 99999)
    return (f"Ticket #{number} [{rng.choice(['P1', 'P2', 'P3'])}] {rng.choice(SUBJECTS)}: user "
            f"{rng.choice(['alice', 'bob', 'chen.wei'])}@example.com reports \"{sentence(rng)}\" "
            f"(since v{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 99)})")


def decomposed(text):
    # Build decomposed forms by hand for a few letters so the script needs no unicodedata version.
    table = {"é": "e\u0301", "ï": "i\u0308", "è": "e\u0300", "ü": "u\u0308", "ñ": "n\u0303",
             "Å": "A\u030a", "ç": "c\u0327", "ř": "r\u030c", "ö": "o\u0308", "â": "a\u0302"}
    return "".join(table.get(c, c) for c in text)


def json_snippet(rng):
    value = {"id": rng.randint(0, 10**6), "name": rng.choice(ACCENTED), "ok": rng.random() < 0.5,
             "score": round(rng.uniform(-10, 10), 4), "tags": [rng.choice(WORDS) for _ in range(3)],
             "nested": {"emoji": rng.choice(EMOJI), "null": None}}
    return json.dumps(value, ensure_ascii=rng.random() < 0.3)


CODE = ["def f(x):\n    return x ** 2  # square", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
        "std::vector<int32_t> ids{101, 102};", "SELECT * FROM users WHERE id = 42;",
        "if (a && b || !c) { return -1; }", "const re = /^[a-z0-9_]+$/i;",
        "curl -X POST https://api.example.com/v1/decisions -H 'Authorization: Bearer sk-123'",
        "<div class=\"row\"><span>Hi &amp; bye</span></div>", "x => x.map(y => y * 2)"]
URLS = ["https://example.com/path?q=hello+world&lang=en#frag", "http://localhost:8080/v1/models",
        "ftp://files.example.org/pub/file_v2.tar.gz", "mailto:someone@example.co.uk",
        "https://ja.wikipedia.org/wiki/東京", "www.example.com/ä/ö/ü"]


def mixed(rng):
    parts = []
    for _ in range(rng.randint(3, 12)):
        kind = rng.randrange(10)
        if kind == 0:
            parts.append(rng.choice(ACCENTED))
        elif kind == 1:
            parts.append(rng.choice(SCRIPTS))
        elif kind == 2:
            parts.append(rng.choice(EMOJI) * rng.randint(1, 3))
        elif kind == 3:
            parts.append(rng.choice(SPECIALS))
        elif kind == 4:
            parts.append("".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 6))))
        elif kind == 5:
            parts.append(str(rng.choice([rng.randint(0, 10**9), rng.uniform(-1e6, 1e6)])))
        else:
            parts.append(words(rng, rng.randint(1, 4)))
    return "".join(p + rng.choice([" ", " ", "", rng.choice(SPACES)]) for p in parts)


def long_word(rng):
    length = rng.choice([99, 100, 101, 120, 250])
    alphabet = rng.choice(["abcdefghij", "é", "ab", "xyz" + "é", "λ", "字a"])
    return "".join(rng.choice(alphabet) for _ in range(length))


def sweep_lines():
    # Every 7th code point of the BMP and a stride through the supplementary planes, 64 per line,
    # so the category tables (control, punctuation, marks, case, CJK ranges) are all exercised.
    points = [cp for cp in range(0x20, 0x10000, 7) if not 0xD800 <= cp <= 0xDFFF]
    points += list(range(0x10000, 0x110000, 997))
    lines = []
    for start in range(0, len(points), 64):
        chunk = points[start:start + 64]
        lines.append(" ".join("a" + chr(cp) + "b" if i % 2 else chr(cp) for i, cp in enumerate(chunk)))
    return lines


def escape(char):
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def to_json_line(text):
    # Readable UTF-8, but anything invisible or line-breaking (U+2028, U+0085, controls, format
    # characters, unassigned) is escaped so each corpus entry stays on one physical line.
    encoded = json.dumps(text, ensure_ascii=False)
    return "".join(c if c.isprintable() else escape(c) for c in encoded)


def main():
    rng = random.Random(SEED)
    lines = ["", " ", "Hello, world!", "HELLO WORLD", "hello world", "[CLS]", "[CLS] hello [SEP]",
             "a[MASK]b", "[UNK]", "[cls]", "unaffable", "ab" * 60, "x" * 100, "x" * 101,
             "\t\n\r", "\u00a0\u3000\u200b", "e\u0301", "é", "İ", "ß", "ǅ", "Σ", "ΣΑΣ", "ﬀ", "①",
             "\x00\x01hi\x7f", "\ufffd", "😀", "👨‍👩‍👧‍👦", "1.5e-3", "$100,000.00", "...!!!???"]
    generators = [sentence] * 4 + [ticket] * 2 + [json_snippet, mixed, mixed, mixed, long_word]
    while len(lines) < 1700:
        gen = rng.choice(generators)
        text = gen(rng)
        if rng.random() < 0.1:
            text = decomposed(text)
        lines.append(text)
    for text in ACCENTED + SCRIPTS + EMOJI + SPECIALS + SPACES + CONTROLS + CODE + URLS:
        lines.append(f"before {text} after")
        lines.append(decomposed(text))
    for _ in range(20):
        lines.append(" ".join(sentence(rng) for _ in range(rng.randint(30, 50))))
    lines += sweep_lines()
    with OUT.open("w", encoding="utf-8") as out:
        for text in lines:
            out.write(to_json_line(text) + "\n")
    print(f"wrote {len(lines)} lines to {OUT}")


if __name__ == "__main__":
    main()
