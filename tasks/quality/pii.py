"""PII redaction of kept documents: email addresses, public IP addresses and phone numbers replaced by fixed
placeholders (Dolma's), counted per type.

It runs in the quality filter's write, after every score is taken, so redaction changes no quality decision.
The placeholders are fixed strings, not datatrove's rotating fake values, so a document's output depends on it
alone. The patterns lean to precision, and each trap they avoid is in tests/test_pii.py:
- emails need a dotted domain ending in letters (`pkg@1.2.3`, `user@localhost` and `@handles` stay);
- an IPv4 address is four octets standing alone (not a part of `1.2.3.4.5` or `v1.2.3.4`, nor after "version",
  "release" or "build"), and, as datatrove does by default, only a globally routable one: private, loopback and
  documentation addresses identify nobody;
- IPv6 needs a valid global address with at least two colon groups (`12:30:45` is a time, not an address);
- a phone number is either international (a leading `+`, 8 to 15 digits in groups) or North American
  (NANP: area code and exchange starting 2-9, grouped 3-3-4 with `-`, `.`, or `(...)`), never bare digit runs, so
  dates (2021-11-23, 11/23/2021), years and ranges (1990-2000), ISBNs, SSN-shaped numbers and prices stay.
"""
from __future__ import annotations

import ipaddress
import re
from collections import Counter

from configs.quality import PiiConfig

PLACEHOLDERS = {"email": "|||EMAIL_ADDRESS|||", "ip": "|||IP_ADDRESS|||", "phone": "|||PHONE_NUMBER|||"}

EMAIL = re.compile(r"(?<![\w.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
                   r"[A-Za-z]{2,24}(?![\w-])")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\d)")
IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:.])")
VERSION_CUE = re.compile(r"(?:\bv|\bversion|\bver\.?|\brelease|\bbuild|\bfirmware|\bkernel)\s*:?\s*$", re.IGNORECASE)
PHONE = re.compile(
    r"(?<![\w+.-])(?:"
    r"\+\d{1,3}(?:(?: ?[./-] ?| )?\(?\d{1,4}\)?){2,5}"                         # international, E.164-like
    r"|(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}(?P<sep>[.-]))[2-9]\d{2}(?(sep)(?P=sep)|[ .-])\d{4}"  # NANP
    r")(?![\w]|[.-]\d)")


def redact(text: str, config: PiiConfig) -> tuple[str, Counter]:
    """The text with each enabled kind of PII replaced by its placeholder, and how many of each were replaced."""
    counts: Counter = Counter()
    if config.emails:
        text = _replace(EMAIL, text, "email", counts, lambda match: True)
    if config.ips:
        text = _replace(IPV4, text, "ip", counts, _is_public_ipv4)
        text = _replace(IPV6, text, "ip", counts, _is_public_ipv6)
    if config.phones:
        text = _replace(PHONE, text, "phone", counts, _is_phone)
    return text, counts


def _replace(pattern: re.Pattern, text: str, kind: str, counts: Counter, valid) -> str:
    def substitute(match: re.Match) -> str:
        if not valid(match):
            return match.group(0)
        counts[kind] += 1
        return PLACEHOLDERS[kind]
    return pattern.sub(substitute, text)


def _is_public_ipv4(match: re.Match) -> bool:
    if VERSION_CUE.search(match.string[max(0, match.start() - 16):match.start()]):
        return False
    return ipaddress.IPv4Address(match.group(0)).is_global


def _is_public_ipv6(match: re.Match) -> bool:
    try:
        address = ipaddress.IPv6Address(match.group(0))
    except ValueError:
        return False
    return address.is_global


def _is_phone(match: re.Match) -> bool:
    digits = sum(character.isdigit() for character in match.group(0))
    return (8 if match.group(0).startswith("+") else 10) <= digits <= 15
