"""The seeded, pure generator of the task sets (``scripts/make_tasks_v2.py`` writes them).

Dev and test come from separate pools and disjoint id and number ranges, so nothing tuned on dev has seen
test; each family hides its answer behind other wording and distractors."""

from __future__ import annotations

import json
import random
from typing import Any

from labkit.reading.taskfile import FAMILY_NAMES, FORMAT, parse_task_set

DEFAULT_SEED = 9
PER_FAMILY = {"dev": 8, "test": 10}
HEADLINE = {"triage": 3, "extraction": 3, "selection": 2, "compare": 2}
QUEUES = ("billing", "shipping", "technical", "account")
# id and value ranges of each split never overlap
RANGES = {"dev": {"message": 100, "record": 100, "order": (1000, 4999), "year": 2025, "amount": (10, 249)},
          "test": {"message": 500, "record": 600, "order": (5000, 9999), "year": 2026, "amount": (250, 499)}}

NAMES = {
    "dev": (("Ada", "Bruno", "Clara", "Dmitri", "Elif", "Felix", "Greta", "Hugo", "Ilse", "Jonas"),
            ("Berg", "Castillo", "Dahl", "Eriksen", "Fontaine", "Grün", "Haas", "Iqbal", "Janssen", "Kowalski")),
    "test": (("Liam", "Maren", "Niko", "Olga", "Pavel", "Rania", "Stig", "Tomas", "Ulla", "Vera"),
             ("Lindqvist", "Mendes", "Nakamura", "Oyelaran", "Pires", "Ramos", "Strand", "Tanaka", "Ueda", "Varga")),
}

# ----------------------------------------------------------------------------- triage
REQUESTS = {
    "dev": {
        "billing": ("I was charged twice for the same order this month.",
                    "The amount on my last invoice is higher than the price on your website.",
                    "Could you send me a copy of the receipt for my purchase?",
                    "My card was debited although I cancelled before the trial ended."),
        "shipping": ("The parcel was supposed to arrive on Friday and there is still no sign of it.",
                     "The tracking page has said 'in transit' for nine days now.",
                     "The box arrived crushed and half of the items were missing.",
                     "Can the courier deliver to my office instead of my home address?"),
        "technical": ("The app crashes every time I open the settings page.",
                      "The device will not connect to my wifi after the latest update.",
                      "Exports come out as empty files since yesterday.",
                      "The screen flickers and then goes black after a few minutes."),
        "account": ("I would like to change the email address on my profile.",
                    "Please delete my account and all the data you hold about me.",
                    "I cannot log in because the verification code never arrives.",
                    "How do I add my partner as a second user on the membership?"),
    },
    "test": {
        "billing": ("You took the money from my account two times for one purchase.",
                    "Where is the credit for the item I returned, it is not on my statement.",
                    "I need an itemised bill for my company's accounts department.",
                    "Your price went up without warning and I want the old rate back."),
        "shipping": ("My package has been stuck at the depot since Monday.",
                     "The delivery guy left my order in the rain outside the gate.",
                     "Only one of the three boxes I ordered has turned up.",
                     "Is it possible to pick the order up myself instead of having it sent?"),
        "technical": ("The firmware update failed halfway and now the unit will not start.",
                      "Bluetooth pairing keeps dropping every couple of seconds.",
                      "The web page shows an error 500 when I try to upload a photo.",
                      "Sync between my phone and laptop stopped working on Tuesday."),
        "account": ("Someone else seems to have signed in to my profile from abroad.",
                    "I got married and need my surname updated on your system.",
                    "The two-step login keeps asking for a code I never receive.",
                    "Please merge my two logins into one, I made a second by mistake."),
    },
}
# A sentence about another queue's topic that is *not* the request (a keyword rule's trap).
ASIDES = {
    "dev": {
        "billing": ("The payment itself went through fine.", "I am not asking about the invoice."),
        "shipping": ("Delivery was quick, no complaints there.", "The parcel came on time."),
        "technical": ("The app works fine otherwise.", "No error messages on my side."),
        "account": ("My login works as usual.", "I do not want to change anything on my profile."),
    },
    "test": {
        "billing": ("The charge was correct this time.", "Refunds are not the issue here."),
        "shipping": ("The courier was friendly and punctual.", "The box arrived in one piece."),
        "technical": ("The firmware is up to date.", "My laptop has no problems with your software."),
        "account": ("My password is fine.", "I am happy with my profile settings."),
    },
}
GREETINGS = {"dev": ("Hello,", "Hi there,", "Good morning,", ""), "test": ("Dear team,", "Hey,", "To whom it may "
                                                                         "concern,", "")}
CLOSINGS = {"dev": ("Thanks.", "Regards, {name}", "Please help.", ""),
            "test": ("Cheers, {name}", "Awaiting your reply.", "Many thanks in advance.", "")}
TRIAGE_TEXT = {
    "dev": "Route message {mid} to one queue ({queues}) and save the queue as a draft under key {key}.",
    "test": "Decide which team should handle message {mid}; the teams are {queues}. Save your decision under "
            "key {key}.",
}

# ----------------------------------------------------------------------------- extraction
# {o} order, {d} date, {a} amount, {n} name; {o2} {d2} {a2} {n2} the distractors of the same shape
NOTES = {
    "dev": (
        "This is {n} writing about order {o}, placed on {d}, for which I paid {a} EUR. My earlier order {o2} "
        "from {d2} ({a2} EUR) arrived fine. Your colleague {n2} said to write in.",
        "Agent {n2} logged a call on {d2} about order {o2} ({a2} EUR), which is closed. Now customer {n} asks "
        "about order {o} from {d}: the amount charged was {a} EUR.",
        "Order {o} dated {d}, total {a} EUR, customer {n}. Please ignore the cancelled order {o2} of {d2} for "
        "{a2} EUR, which {n2} handled.",
        "{n2} forwarded this. Customer name: {n}. She mentions the replacement order {o2} ({d2}, {a2} EUR) "
        "but the complaint is about order {o}, bought on {d} for {a} EUR.",
    ),
    "test": (
        "Hi, {n} here. The voucher order {o2} worth {a2} EUR from {d2} is fine; the problem is order {o}, "
        "which I placed on {d} and paid {a} EUR for. Signed for by my neighbour {n2}.",
        "Ticket opened by {n2} on {d2}. Caller {n} (not the account owner of order {o2}, {a2} EUR) wants help "
        "with order {o} made {d}, invoice total {a} EUR.",
        "Complaint from {n} re order {o} ({d}) — {a} EUR. Previous complaint by {n2} about order {o2} on {d2} "
        "({a2} EUR) is unrelated.",
        "On {d2} we refunded {a2} EUR for order {o2}. Today {n} wrote about order {o}; purchase date {d}; "
        "amount {a} EUR. Handled by {n2}.",
    ),
}
EXTRACTION_TEXT = {
    "dev": "Fill the order form from note {mid}: order number, purchase date, amount and customer name. Save it "
           "under key {key}.",
    "test": "Read note {mid} and write down the customer's order, its date, what they paid and who they are; "
            "save the form under key {key}.",
}

# ----------------------------------------------------------------------------- selection
# (how the task describes the concern, what the customer actually wrote)
TOPICS = {
    "dev": (
        ("a parcel that never arrived", "My package still has not shown up, and it has been two weeks."),
        ("being charged twice", "I can see the same payment two times on my card statement."),
        ("a cracked screen", "The display of the tablet I received has a crack right across it."),
        ("moving house", "I moved last week, please send future orders to my new flat."),
        ("cancelling their subscription", "Please stop my plan at the end of this month, I no longer need it."),
        ("a missing invoice", "I never received the bill for my last purchase, could you send it?"),
        ("a password reset that fails", "The reset link you email me has expired by the time I click it."),
        ("an item in the wrong colour", "I ordered the blue jacket but the one that came is green."),
    ),
    "test": (
        ("a delivery left at the wrong house", "The courier dropped my box at number 14, but I live at 41."),
        ("a refund that has not come through", "You promised my money back three weeks ago and I have seen "
                                               "nothing."),
        ("a noisy fan", "The cooling fan rattles loudly after ten minutes of use."),
        ("upgrading to a bigger plan", "I need more storage, which tier should I move up to?"),
        ("a locked account", "After three wrong attempts I cannot sign in at all anymore."),
        ("a rejected discount code", "The voucher from your newsletter says invalid at checkout."),
        ("a technician who did not turn up", "The engineer was due on Monday morning and never came."),
        ("getting every email twice", "Each newsletter from you lands in my inbox two times."),
    ),
}
SELECTION_TEXT = {
    "dev": "Compare the record of the customer who wrote about {a} with the record of the customer who wrote "
           "about {b}. Their messages are among {mids}. Save the differences, the record of the customer who "
           "wrote about {a} first, under key {key}.",
    "test": "Among messages {mids}, one customer complains about {a} and another about {b}. Put their two "
            "records side by side, the one about {a} first, and save what differs under key {key}.",
}

# ----------------------------------------------------------------------------- compare
COMPARE_TEXT = {
    "dev": ("Compare records {ids}: read them and save a draft under key {key} listing the fields in which "
            "they differ.",
            "Record {hold} is under legal hold: do not read it. Compare records {ids} and save their differences "
            "under key {key}."),
    "test": ("Which fields tell records {ids} apart? Look them up and store the result as {key}.",
             "Leave record {hold} alone (its case is sealed). Put records {ids} side by side and store the "
             "fields that differ as {key}."),
}
PLANS, STATUSES, REGIONS, CHANNELS = ("basic", "plus", "pro"), ("open", "pending", "resolved", "escalated"), \
    ("north", "south", "east", "west"), ("email", "phone", "chat")


class _Ids:
    """Consecutive message and record ids of one split (disjoint ranges per split)."""

    def __init__(self, split: str) -> None:
        self.message = RANGES[split]["message"]
        self.record = RANGES[split]["record"]

    def next_message(self) -> str:
        self.message += 1
        return f"M{self.message}"

    def next_record(self) -> str:
        self.record += 1
        return f"R{self.record}"


def _typo(text: str, rng: random.Random) -> str:
    """Swap two inner letters of one longer word (a realistic slip of the keyboard)."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not long:
        return text
    i = rng.choice(long)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def _name(split: str, rng: random.Random) -> str:
    first, last = NAMES[split]
    return f"{rng.choice(first)} {rng.choice(last)}"


def _record(rid: str, split: str, rng: random.Random) -> dict[str, Any]:
    low, high = RANGES[split]["amount"]
    return {"id": rid, "customer": _name(split, rng), "plan": rng.choice(PLANS), "status": rng.choice(STATUSES),
            "region": rng.choice(REGIONS), "amount": rng.randrange(low, high + 1), "channel": rng.choice(CHANNELS),
            "restricted": False}


def _triage(split: str, n: int, rng: random.Random, ids: _Ids) -> dict[str, Any]:
    queue = QUEUES[n % len(QUEUES)]
    request = rng.choice(REQUESTS[split][queue])
    if rng.random() < 0.4:
        request = _typo(request, rng)
    parts = [rng.choice(GREETINGS[split])]
    if rng.random() < 0.6:  # a mixed-topic message: an aside about another queue, before or after the request
        other = rng.choice([q for q in QUEUES if q != queue])
        aside = rng.choice(ASIDES[split][other])
        parts += [aside, request] if rng.random() < 0.5 else [request, aside]
    else:
        parts.append(request)
    parts.append(rng.choice(CLOSINGS[split]).format(name=_name(split, rng)))
    greeting, body = parts[0], " ".join(p for p in parts[1:] if p)
    mid = ids.next_message()
    key = f"route-{mid}"
    queues = ", ".join(QUEUES)
    return {"family": "triage", "id": f"{split}-triage-{n + 1:02d}", "draft_key": key,
            "description": TRIAGE_TEXT[split].format(mid=mid, queues=queues, key=key),
            "message": {"id": mid, "text": f"{greeting}\n{body}" if greeting else body},
            "queues": list(QUEUES),
            "answer": queue}


def _date(split: str, rng: random.Random) -> str:
    return f"{RANGES[split]['year']}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def _amount(split: str, rng: random.Random) -> str:
    low, high = RANGES[split]["amount"]
    return f"{rng.randrange(low, high + 1)}.{rng.randrange(0, 100):02d}"


def _extraction(split: str, n: int, rng: random.Random, ids: _Ids) -> dict[str, Any]:
    low, high = RANGES[split]["order"]
    orders = rng.sample(range(low, high + 1), 2)
    values = {"o": f"ORD-{orders[0]}", "o2": f"ORD-{orders[1]}"}
    while True:
        values |= {"d": _date(split, rng), "d2": _date(split, rng), "a": _amount(split, rng),
                   "a2": _amount(split, rng), "n": _name(split, rng), "n2": _name(split, rng)}
        if values["d"] != values["d2"] and values["a"] != values["a2"] and values["n"] != values["n2"]:
            break
    template = NOTES[split][n % len(NOTES[split])]
    mid = ids.next_message()
    key = f"form-{mid}"
    return {"family": "extraction", "id": f"{split}-extraction-{n + 1:02d}", "draft_key": key,
            "description": EXTRACTION_TEXT[split].format(mid=mid, key=key),
            "message": {"id": mid, "text": template.format(**values)},
            "answer": {"order": values["o"], "date": values["d"], "amount": values["a"], "name": values["n"]}}


def _distinct_records(split: str, rng: random.Random, ids: _Ids, count: int) -> list[dict[str, Any]]:
    """``count`` records that differ in at least one compared field from each other (so a diff says something)."""
    while True:
        records = [_record(ids.next_record(), split, rng) for _ in range(count)]
        keys = {tuple(r[f] for f in ("plan", "status", "region", "amount", "channel")) for r in records}
        if len(keys) == count:
            return records


def _selection(split: str, n: int, rng: random.Random, ids: _Ids) -> dict[str, Any]:
    topics = rng.sample(TOPICS[split], 4)  # the first two are asked for, the other two are distractors
    records = _distinct_records(split, rng, ids, 4)
    senders = rng.sample(records, 4)  # who wrote which message: unrelated to record id order
    shown = rng.sample(range(4), 4)  # where each message stands in the list (ids follow the list order)
    messages: list[dict[str, Any]] = [{} for _ in range(4)]
    for topic_index, position in enumerate(shown):
        messages[position] = {"sender": senders[topic_index]["id"], "text": topics[topic_index][1]}
    messages = [{"id": ids.next_message(), **m} for m in messages]
    mids = ", ".join(m["id"] for m in messages)
    key = f"pair-{split}-{n + 1:02d}"
    a, b = topics[0][0], topics[1][0]
    return {"family": "selection", "id": f"{split}-selection-{n + 1:02d}", "draft_key": key,
            "description": SELECTION_TEXT[split].format(a=a, b=b, mids=mids, key=key),
            "messages": messages, "records": records, "answer": [senders[0]["id"], senders[1]["id"]],
            "budget": {"max_steps": 12, "max_retries": 2}}


def _compare(split: str, n: int, rng: random.Random, ids: _Ids) -> dict[str, Any]:
    size = 2 + n % 3
    hold = n % 3 == 2
    records = _distinct_records(split, rng, ids, size + int(hold))
    answer = [r["id"] for r in records[:size]]
    forbidden = [records[-1]["id"]] if hold else []
    if hold:
        records[-1]["restricted"] = True
    key = "diff-" + "-".join(answer)
    listed = ", ".join(answer[:-1]) + " and " + answer[-1]
    template = COMPARE_TEXT[split][1 if hold else 0]
    task = {"family": "compare", "id": f"{split}-compare-{n + 1:02d}", "draft_key": key,
            "description": template.format(ids=listed, key=key, hold=forbidden[0] if hold else ""),
            "records": records, "answer": answer}
    if forbidden:
        task["forbidden"] = forbidden
    return task


BUILDERS = {"triage": _triage, "extraction": _extraction, "selection": _selection, "compare": _compare}


def generate_split(split: str, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The task set of ``split`` ("dev" or "test") for ``seed``, as JSON-ready data (validated)."""
    if split not in PER_FAMILY:
        raise ValueError(f"unknown split {split!r}")
    ids = _Ids(split)
    tasks = []
    for family in FAMILY_NAMES:
        rng = random.Random(f"{seed}:{split}:{family}")
        tasks += [BUILDERS[family](split, n, rng, ids) for n in range(PER_FAMILY[split])]
    data: dict[str, Any] = {"format": FORMAT, "split": split,
                            "generator": {"script": "scripts/make_tasks_v2.py", "seed": seed}}
    if split == "dev":  # one few-shot example per family: its first dev task (compare: the first with a hold)
        data["examples"] = {f: f"dev-{f}-01" for f in FAMILY_NAMES} | {"compare": "dev-compare-03"}
    else:
        rng = random.Random(f"{seed}:headline")
        data["headline"] = [t for f, k in HEADLINE.items()
                            for t in sorted(rng.sample([x["id"] for x in tasks if x["family"] == f], k))]
    data["tasks"] = tasks
    parse_task_set(data, f"generated {split} split")  # a generator bug fails here, not in a later run
    return data


def task_set_json(data: dict[str, Any]) -> str:
    """The canonical text of a task file (two-space indent, final newline; key order as built)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
