#!/usr/bin/env python3
"""Fills {{charset:len}} slots of a rules template with SYNTHETIC random strings (seeded).

Used once to write src/redact/rules.toml; kept so the examples can be regenerated.
Usage: gen_rules.py TEMPLATE > src/redact/rules.toml
"""
import random, re, sys

SETS = {
    "A": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "a": "abcdefghijklmnopqrstuvwxyz0123456789",
    "L": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "U": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    "B32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "b32": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",
    "b": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "u": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
    "d": "0123456789",
}
rng = random.Random(20261130)
BAD = re.compile(r"(?i)example|xxxxxx|placeholder|changeme|redacted|dummy|0000|0123|abcdef|secret|token|test|pass")

def fill(m):
    cs, n = m.group(1), int(m.group(2))
    while True:
        s = "".join(rng.choice(SETS[cs]) for _ in range(n))
        if not BAD.search(s):
            return s

text = open(sys.argv[1]).read()
sys.stdout.write(re.sub(r"\{\{(A|a|L|h|H|U|B32|b32|b|u|d):(\d+)\}\}", fill, text))
