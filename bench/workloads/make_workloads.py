#!/usr/bin/env python3
"""Generate the synthetic bench workloads (Python standard library only, seeded, deterministic).

    python3 bench/workloads/make_workloads.py            # writes next to this script
    python3 bench/workloads/make_workloads.py --out DIR

public231_synthetic.jsonl  231 single-question text requests shaped like the reference project's
                           Public231: 74 noul, 157 choice with 3-6 options (ticket routing,
                           sentiment, topic, language), each with its expected answer.
multi_question.jsonl       100 support e-mails of roughly 100-400 tokens, each with 2-8 questions
                           of mixed types (choice, noul, score) and expected answers.

Each line is {"request": <System One body>, "expected": {<question key>: <answer>}}; an answer is
a choice name, true/false for noul, or the expected level index for score. Bodies carry no
"model", so the server's default model answers (or use `s1serve bench --model NAME`).
The texts are deliberately unambiguous: a competent model should get nearly all of them right.
"""

import argparse
import json
import pathlib
import random

SEED = 231

# --- building blocks -------------------------------------------------------------------------

TEAMS = {
    "billing": "Payments, invoices, refunds and charges",
    "technical": "Bugs, crashes, errors and outages",
    "account": "Login, password, profile and access",
    "shipping": "Delivery, tracking and parcels",
    "sales": "Pricing, quotes, upgrades and new purchases",
    "other": None,
}

TEAM_TEXTS = {
    "billing": [
        "I was charged twice for my {plan} subscription this month. Please refund the duplicate payment.",
        "My invoice for {month} shows an amount that is higher than the price I agreed to pay.",
        "The payment of {amount} was taken from my credit card but the invoice still says unpaid.",
        "Why was my card billed {amount} after I cancelled the {plan} plan? I want that charge reversed.",
        "I need a corrected invoice with our VAT number for the {month} payment.",
    ],
    "technical": [
        "The app crashes every time I open the settings page on my {device}.",
        "Since the last update the dashboard shows error 500 and nothing loads.",
        "Exporting a report fails with a timeout error after about {minutes} minutes.",
        "The mobile app freezes on the loading screen on my {device} and I have to force close it.",
        "Sync between my {device} and the web version is broken: changes never show up.",
    ],
    "account": [
        "I cannot log in: the password reset e-mail never arrives.",
        "Please change the e-mail address on my profile, I no longer have access to the old one.",
        "My account is locked after too many login attempts and I need access again.",
        "How do I add a second administrator to our team account and change my username?",
        "Two-factor authentication codes are rejected and I am locked out of my profile.",
    ],
    "shipping": [
        "My parcel with order {order} has not been delivered, the tracking has not moved for {days} days.",
        "The courier says the package was delivered but nothing arrived at my address.",
        "Can you change the delivery address for order {order}? The parcel has not shipped yet.",
        "The tracking number you sent for my delivery does not work on the carrier's website.",
        "My package arrived {days} days late and the box was crushed during delivery.",
    ],
    "sales": [
        "We are a team of {seats} people and would like a quote for the enterprise plan.",
        "What is the price difference between the {plan} plan and the premium plan if we upgrade?",
        "Do you offer a discount for non-profit organisations buying {seats} licences?",
        "I would like to purchase {seats} additional seats; can you send me pricing?",
        "Before we buy, can we get a demo and a price list for annual plans?",
    ],
}

SENTIMENT_TEXTS = {
    "positive": [
        "Absolutely love this product, it works perfectly and the support team was wonderful!",
        "Fantastic experience, fast delivery and great quality. Highly recommended!",
        "The best purchase I made this year. Everything about it is excellent.",
        "Thank you so much, the new feature is brilliant and saves me hours every week.",
        "Superb service, friendly staff and a delicious meal. We will definitely come back.",
    ],
    "negative": [
        "Terrible product. It broke after two days and nobody answers my complaints.",
        "Worst customer service ever, I am furious and want my money back.",
        "Awful quality, completely useless, a total waste of money. Very disappointed.",
        "The food was cold, the waiter was rude and we waited an hour. Never again.",
        "I hate the new update, it is slow, buggy and ruined my workflow.",
    ],
    "neutral": [
        "The package contains one charger and a manual. The device weighs 300 grams.",
        "The store opens at 9 am and closes at 6 pm from Monday to Friday.",
        "I received the order today. It is the blue model, size medium.",
        "The meeting has been moved to Thursday at 2 pm in room 4.",
        "The product is available in three colours and two sizes.",
    ],
}

TOPICS = {
    "sports": "Sport events, teams and athletes",
    "politics": "Government, elections and laws",
    "technology": "Software, gadgets and the internet",
    "science": "Research, discoveries and experiments",
    "business": "Companies, markets and the economy",
    "entertainment": "Films, music and celebrities",
    "health": "Medicine, fitness and disease",
    "travel": "Trips, destinations and tourism",
}

TOPIC_TEXTS = {
    "sports": [
        "The home team scored in the final minute to win the championship match 2-1.",
        "The tennis star won her third Grand Slam title after a five-set final.",
        "The marathon runner broke the world record by eleven seconds on Sunday.",
    ],
    "politics": [
        "Parliament passed the new election law after a long debate between the parties.",
        "The prime minister announced a cabinet reshuffle ahead of next year's general election.",
        "Voters head to the polls on Sunday to choose a new president and senate.",
    ],
    "technology": [
        "The company released a new smartphone with a faster chip and a better camera app.",
        "A software update fixes a security bug in the popular web browser.",
        "The startup launched a cloud service that lets developers deploy apps in seconds.",
    ],
    "science": [
        "Astronomers discovered a new exoplanet orbiting a nearby star using a space telescope.",
        "Researchers published an experiment showing how the proteins fold inside living cells.",
        "Physicists measured the particle's mass with unprecedented precision in the laboratory.",
    ],
    "business": [
        "The company's quarterly profits rose 12 percent and its shares jumped on the stock market.",
        "The two banks agreed to a merger worth 8 billion dollars, pending regulatory approval.",
        "Inflation slowed last month as the central bank kept interest rates unchanged.",
    ],
    "entertainment": [
        "The film won best picture at the awards ceremony and its director thanked the cast.",
        "The pop singer announced a world tour to promote her new album.",
        "The streaming series was renewed for a fourth season after record viewing figures.",
    ],
    "health": [
        "Doctors recommend thirty minutes of exercise a day to lower the risk of heart disease.",
        "A new vaccine reduced hospital admissions for the flu by half in the clinical trial.",
        "The hospital opened a clinic for patients with diabetes and high blood pressure.",
    ],
    "travel": [
        "The airline added direct flights to Lisbon, and hotels there expect a record tourist season.",
        "Backpackers love the island's beaches, cheap hostels and ferry trips between villages.",
        "The city guide lists the best museums, walking tours and restaurants for visitors.",
    ],
}

LANGUAGE_TEXTS = {
    "English": ["Good morning, could you please tell me when my order will arrive?",
                "The weather is lovely today and we are going to the park."],
    "French": ["Bonjour, pourriez-vous me dire quand ma commande arrivera ?",
               "Il fait beau aujourd'hui et nous allons au parc avec les enfants."],
    "German": ["Guten Morgen, können Sie mir bitte sagen, wann meine Bestellung ankommt?",
               "Das Wetter ist heute schön und wir gehen mit den Kindern in den Park."],
    "Spanish": ["Buenos días, ¿podría decirme cuándo llegará mi pedido?",
                "Hoy hace buen tiempo y vamos al parque con los niños."],
    "Italian": ["Buongiorno, potrebbe dirmi quando arriverà il mio ordine?",
                "Oggi il tempo è bello e andiamo al parco con i bambini."],
    "Portuguese": ["Bom dia, poderia me dizer quando o meu pedido vai chegar?",
                   "Hoje o tempo está bonito e vamos ao parque com as crianças."],
}

FILL = {
    "plan": ["Basic", "Pro", "Team", "Starter"],
    "month": ["January", "March", "June", "September", "November"],
    "amount": ["$49.00", "€120.00", "£15.99", "$9.99"],
    "device": ["iPhone", "Android phone", "iPad", "Windows laptop"],
    "minutes": ["2", "5", "10"],
    "order": ["#48213", "#90412", "#11873", "#55620"],
    "days": ["5", "8", "12"],
    "seats": ["25", "40", "150"],
}


def fill(rng, template):
    out = template
    for key, values in FILL.items():
        out = out.replace("{" + key + "}", rng.choice(values))
    return out


def options_with(rng, names, correct, count):
    """`count` option names from `names`, always including `correct`, in a shuffled order."""
    others = [name for name in names if name != correct]
    picked = rng.sample(others, count - 1) + [correct]
    rng.shuffle(picked)
    return picked


def line(state, questions, expected):
    return {"request": {"state": state, "questions": questions}, "expected": expected}


# --- public231_synthetic ---------------------------------------------------------------------

NOUL_KINDS = [
    # (instructions, builder returning (text, answer))
    ("Does the customer ask for a refund or money back?", "refund"),
    ("Is this review positive?", "positive"),
    ("Does the message report a delivery or shipping problem?", "delivery"),
    ("Is this message written in French?", "french"),
    ("Does the text talk about sports?", "sports"),
]


def noul_case(rng, kind):
    if kind == "refund":
        yes = rng.random() < 0.5
        text = (rng.choice(["I want a full refund for this order, please send my money back.",
                            "Please refund the {amount} you charged me, I never used the service.",
                            "Cancel my subscription and give me my money back for {month}."])
                if yes else rng.choice(["How do I change my profile picture?",
                                        "Thanks, the issue is solved and everything works now.",
                                        "Can you tell me your opening hours on Saturday?"]))
        return fill(rng, text), yes
    if kind == "positive":
        yes = rng.random() < 0.5
        return rng.choice(SENTIMENT_TEXTS["positive" if yes else "negative"]), yes
    if kind == "delivery":
        yes = rng.random() < 0.5
        text = rng.choice(TEAM_TEXTS["shipping"] if yes else TEAM_TEXTS["account"] + TEAM_TEXTS["sales"])
        return fill(rng, text), yes
    if kind == "french":
        yes = rng.random() < 0.5
        language = "French" if yes else rng.choice(["English", "German", "Spanish", "Italian"])
        return rng.choice(LANGUAGE_TEXTS[language]), yes
    yes = rng.random() < 0.5
    topic = "sports" if yes else rng.choice(["politics", "science", "business", "health"])
    return rng.choice(TOPIC_TEXTS[topic]), yes


def choice_case(rng, kind, count):
    if kind == "ticket":
        count = min(count, len(TEAMS))
        correct = rng.choice([team for team in TEAMS if team != "other"])
        names = options_with(rng, list(TEAMS), correct, count)
        criteria = {name: TEAMS[name] for name in names}
        text = fill(rng, rng.choice(TEAM_TEXTS[correct]))
        return "team", text, {"type": "choice", "instructions": "Which team should handle this support ticket?",
                              "criteria": criteria}, correct
    if kind == "sentiment":
        correct = rng.choice(["positive", "negative", "neutral"])
        # The three core sentiments are always offered; extra labels never fit the texts.
        names = ["positive", "negative", "neutral"] + rng.sample(["mixed", "question", "spam"], count - 3)
        rng.shuffle(names)
        criteria = {name: None for name in names}
        return "sentiment", rng.choice(SENTIMENT_TEXTS[correct]), {
            "type": "choice", "instructions": "What is the sentiment of this text?", "criteria": criteria}, correct
    if kind == "topic":
        correct = rng.choice(list(TOPICS))
        names = options_with(rng, list(TOPICS), correct, count)
        criteria = {name: TOPICS[name] if rng.random() < 0.5 else None for name in names}
        return "topic", rng.choice(TOPIC_TEXTS[correct]), {
            "type": "choice", "instructions": "Which topic is this news item about?", "criteria": criteria}, correct
    correct = rng.choice(list(LANGUAGE_TEXTS))
    names = options_with(rng, list(LANGUAGE_TEXTS), correct, count)
    return "language", rng.choice(LANGUAGE_TEXTS[correct]), {
        "type": "choice", "instructions": "Which language is this text written in?",
        "criteria": {name: None for name in names}}, correct


def public231(rng):
    lines = []
    for index in range(74):
        instructions, kind = NOUL_KINDS[index % len(NOUL_KINDS)]
        text, answer = noul_case(rng, kind)
        question = {"type": "noul", "instructions": instructions}
        if index % 4 == 0:
            question["criteria"] = {"true": "yes", "false": "no"}
        lines.append(line(text, {"answer": question}, {"answer": answer}))
    kinds = ["ticket", "sentiment", "topic", "language"]
    for index in range(157):
        count = 3 + index % 4  # 3, 4, 5, 6 options in turn
        key, text, question, answer = choice_case(rng, kinds[index % len(kinds)], count)
        lines.append(line(text, {key: question}, {key: answer}))
    rng.shuffle(lines)
    return lines


# --- multi_question --------------------------------------------------------------------------

GREETINGS = ["Hello,", "Hi there,", "Dear support team,", "Good afternoon,"]
SIGN_OFFS = ["Best regards,\nAlex", "Thanks,\nSam", "Kind regards,\nJordan Lee", "Cheers,\nMaria"]
BACKGROUND = [
    "I have been a customer for about three years and use the service every day at work.",
    "Our small company has twelve employees and most of them rely on your tool for planning.",
    "I first noticed this last Tuesday, after I came back from a short holiday.",
    "I already searched your help centre and read the frequently asked questions without success.",
    "My colleague in the accounting department told me to write to you directly.",
    "For context, we use the web version on desktop computers and the app on our phones.",
    "I tried again this morning, once from home and once from the office network.",
    "We mostly use the reporting features and the shared calendar.",
    "The previous time I contacted you, the agent was helpful and answered within a day.",
    "I am writing in English, although it is not my first language, so please excuse any mistakes.",
]
MOOD_LINES = {
    "positive": ["Overall I really love your product and I am very happy with it.",
                 "Your team has always been wonderful, thank you for the great work."],
    "negative": ["Honestly I am very angry and disappointed with how this has been handled.",
                 "This is unacceptable and I am extremely unhappy with your service."],
    "neutral": ["I am simply reporting the facts as they are.",
                "Please find the details of the situation above."],
}
URGENCY_LINES = [
    "There is no rush at all; whenever you have time is fine.",
    "It would be nice to have this sorted out sometime this week.",
    "Please handle this soon, it is affecting my daily work.",
    "This is critical: our whole team is blocked and we need it fixed immediately, today!",
]
PRODUCTS = ["Planner Pro", "Mailbox", "Cloud Drive", "Team Chat", "Invoice Hub", "Photo Studio"]


def multi_question(rng):
    lines = []
    for _ in range(100):
        team = rng.choice(["billing", "technical", "account", "shipping", "sales"])
        mood = rng.choice(["positive", "negative", "neutral"])
        urgency = rng.randrange(4)
        refund = rng.random() < 0.5
        order_number = rng.random() < 0.5
        callback = rng.random() < 0.4
        product = rng.choice(PRODUCTS)
        target_tokens = rng.randint(100, 370)

        body = [fill(rng, text) for text in rng.sample(TEAM_TEXTS[team], 2)]
        body.insert(0, f"I am writing about {product}.")
        if refund:
            body.append("I would like a refund of the money I paid for this.")
        if order_number:
            body.append(f"My order number is {rng.choice(FILL['order'])}.")
        if callback:
            body.append("Please call me back on +1 555 0100 to discuss this.")
        body.append(rng.choice(MOOD_LINES[mood]))
        body.append(URGENCY_LINES[urgency])
        # Pad with neutral background sentences until about target_tokens (≈ 4 characters a token).
        background = rng.sample(BACKGROUND, len(BACKGROUND))
        position = 1
        while sum(len(s) + 1 for s in body) < target_tokens * 4 and background:
            body.insert(position, background.pop())
            position += 1
        while sum(len(s) + 1 for s in body) < target_tokens * 4:
            body.insert(position, "To repeat the main point: " + fill(rng, rng.choice(TEAM_TEXTS[team])))
        state = rng.choice(GREETINGS) + "\n\n" + " ".join(body) + "\n\n" + rng.choice(SIGN_OFFS)

        pool = {
            "team": ({"type": "choice", "instructions": "Which team should handle this e-mail?",
                      "criteria": {name: TEAMS[name] for name in options_with(rng, list(TEAMS), team,
                                                                              rng.randint(3, 6))}}, team),
            "sentiment": ({"type": "choice", "instructions": "What is the customer's overall tone?",
                           "criteria": {"positive": None, "negative": None, "neutral": None}}, mood),
            "product": ({"type": "choice", "instructions": "Which product is the e-mail about?",
                         "criteria": {name: None for name in options_with(rng, PRODUCTS, product,
                                                                          rng.randint(3, 6))}}, product),
            "refund_requested": ({"type": "noul", "instructions": "Does the customer ask for a refund?"}, refund),
            "order_number_given": ({"type": "noul", "instructions": "Does the e-mail contain an order number?",
                                    "criteria": {"true": "an order number such as #12345 appears",
                                                 "false": "no order number appears"}}, order_number),
            "callback_requested": ({"type": "noul", "instructions": "Does the customer ask to be called back?"},
                                   callback),
            "urgent": ({"type": "noul", "instructions": "Is the request urgent (needs handling soon or now)?"},
                       urgency >= 2),
            "urgency": ({"type": "score", "instructions": "How urgent is this e-mail?",
                         "criteria": ["low: no rush", "medium: this week", "high: soon", "critical: immediately"]},
                        urgency),
            "satisfaction": ({"type": "score", "instructions": "How satisfied is the customer?",
                              "criteria": [{"label": "unhappy"}, {"label": "neutral"}, {"label": "happy"}]},
                             {"negative": 0, "neutral": 1, "positive": 2}[mood]),
        }
        keys = rng.sample(sorted(pool), rng.randint(2, 8))
        questions = {key: pool[key][0] for key in keys}
        expected = {key: pool[key][1] for key in keys}
        lines.append(line(state, questions, expected))
    return lines


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for entry in lines:
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "public231_synthetic.jsonl", public231(random.Random(SEED)))
    write_jsonl(args.out / "multi_question.jsonl", multi_question(random.Random(SEED + 1)))


if __name__ == "__main__":
    main()
