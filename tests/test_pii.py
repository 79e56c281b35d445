"""PII redaction: hand-made positives and the published precision traps, real snippets of web pages (the
trafilatura evaluation set's labelled lines) and 13 MB of real books, speeches and Wikipedia."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from configs.quality import PiiConfig
from tasks.quality.pii import PLACEHOLDERS, redact

EMAIL, IP, PHONE = PLACEHOLDERS["email"], PLACEHOLDERS["ip"], PLACEHOLDERS["phone"]


@pytest.mark.parametrize("text, expected", [
    ("Write to jane.doe+news@mail.example.co.uk today", f"Write to {EMAIL} today"),
    ("<a>J.Smith@Uni-Example.EDU</a>", f"<a>{EMAIL}</a>"),
    ("server 8.8.8.8, then 142.250.72.14.", f"server {IP}, then {IP}."),
    ("AAAA record 2607:f8b0:4005:80a::200e here", f"AAAA record {IP} here"),
    ("call (415) 555-0132 or 415.555.0132 or 415-555-0132", f"call {PHONE} or {PHONE} or {PHONE}"),
    ("+1 202 555 0143; +44 20 7946 0958; +49 (0)2202 -2809436", f"{PHONE}; {PHONE}; {PHONE}"),
])
def test_each_kind_is_replaced_by_its_placeholder(text, expected):
    assert redact(text, PiiConfig())[0] == expected


@pytest.mark.parametrize("trap", [
    "released in version 2.0.1.5 and v1.2.3.4, build 10.4.2.1",           # versions are not IPs
    "the OID 1.3.6.1.4.1 and the section 1.2.3.4.5",                       # neither are longer dotted numbers
    "router at 192.168.1.1, localhost 127.0.0.1, docs range 192.0.2.7",    # private, loopback, documentation
    "at 12:30:45 on 2021-11-23, 11/23/2021 or 23.11.2021",                 # times and dates are not phones
    "from 1990-2000, ISBN 978-0-306-40615-7, SSN-shaped 123-45-6789",      # ranges, ISBNs, other ids
    "price $1,234,567.89 and 3.14159265358979 and order 1234567890",       # numbers and bare digit runs
    "npm i left-pad@1.3.0; mail user@localhost; follow @sluice; std::vector", # not emails, not IPv6
    "scores +3.5 and -2.1, ::1 and 2001:db8::1",                           # not phones; non-global IPv6
])
def test_precision_traps_are_left_alone(trap):
    assert redact(trap, PiiConfig()) == (trap, Counter())


def test_kinds_can_be_turned_off():
    text = "jane@example.org 8.8.8.8 (415) 555-0132"
    assert redact(text, PiiConfig(emails=False, phones=False))[0] == f"jane@example.org {IP} (415) 555-0132"


def test_real_web_snippets_lose_exactly_their_contact_details(data_dir):
    """Every labelled line of the 990 trafilatura evaluation pages: the only lines redacted are those with an
    email address or a phone number in them (read by hand), and each loses just that."""
    lines = []
    for row in map(json.loads, (data_dir / "html" / "trafilatura_eval" / "manifest.jsonl").open()):
        lines += row["with"] + row["without"]
    changed = {line: redact(line, PiiConfig())[0] for line in lines if redact(line, PiiConfig())[0] != line}
    assert changed == {
        "suivi.reformes.blanquer@gmail.com": EMAIL,
        "althausa@stadt.ahlen.de": EMAIL,
        "info@giromatch.com": EMAIL,
        "hello@strangemachines.io": EMAIL,
        "info@mueritzurlauber.de": EMAIL,
        "+39 389 1976362 info@schlosswirtjuval.it": f"{PHONE} {EMAIL}",
        "+49 8670 986823": PHONE,
        "+81 158-23-2012": PHONE,
        "+49 (0)2202 -2809436": PHONE,
        "Соntасt uѕ аt marketing@breakingbelizenews.com оr саll uѕ аt 501-601-0315.":
            f"Соntасt uѕ аt {EMAIL} оr саll uѕ аt {PHONE}.",
    }
    assert len(lines) > 5000
    # A miss, stated: local numbers without a country code ("Tel. 0863/91131") are not caught.
    assert "Tel. 0863/91131 - Fax 0863/912132" in lines and "Tel. 0863/91131 - Fax 0863/912132" not in changed


def test_books_speeches_and_wikipedia_keep_everything_but_the_contact_lines(data_dir):
    counts, changed = Counter(), set()
    for path in sorted((data_dir / "reference").rglob("*")):
        if path.is_file() and path.suffix != ".gz":
            counts_here = redact(path.read_text(encoding="utf-8", errors="replace"), PiiConfig())[1]
            counts += counts_here
            changed |= {path.relative_to(data_dir / "reference").as_posix()} if counts_here else set()
    # Project Gutenberg's contact lines (its founder's, a volunteer's and its lawyer's addresses and telephone)
    assert changed == {"gutenberg_nltk/README", "gutenberg_nltk/chesterton-ball.txt"}
    assert counts == Counter(email=5, phone=1)
