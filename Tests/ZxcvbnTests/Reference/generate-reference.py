#!/usr/bin/env python3
"""Builds the differential test's corpus and scores it with the reference Python zxcvbn.

Writes reference-scores.tsv: one line per password, `password<TAB>score<TAB>guesses_log10`,
scored by PyPI's zxcvbn 4.5.0 with no user inputs. The corpus is generated from a fixed seed,
so the file only changes when this script or the zxcvbn version does.

    pip install zxcvbn==4.5.0 && python3 generate-reference.py
"""
import random
import string
from pathlib import Path

from zxcvbn import zxcvbn
from zxcvbn.frequency_lists import FREQUENCY_LISTS

rng = random.Random(20261122)
passwords = FREQUENCY_LISTS["passwords"]
words = [w for w in FREQUENCY_LISTS["english_wikipedia"] if w.isalpha() and len(w) >= 3]
names = FREQUENCY_LISTS["female_names"] + FREQUENCY_LISTS["male_names"] + FREQUENCY_LISTS["surnames"]
KEYBOARD_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm", "1234567890", "qazwsxedc", "1qaz2wsx3edc"]
LEET = {"a": "4", "e": "3", "o": "0", "i": "1", "s": "$", "t": "7"}


def leet(word):
    return "".join(LEET.get(c, c) if rng.random() < 0.7 else c for c in word)


def keyboard_walk():
    row = pick(KEYBOARD_ROWS)
    n = rng.randint(4, min(9, len(row)))
    start = rng.randint(0, len(row) - n)
    walk = row[start:start + n]
    if rng.random() < 0.3:
        walk = walk[::-1]
    if rng.random() < 0.3:
        walk = walk.capitalize()
    if rng.random() < 0.4:
        walk += str(rng.randint(0, 99))
    return walk


def pick(population, top=None):
    return rng.choice(population[:top] if top else population)


generators = {
    "common password": lambda: pick(passwords, 2000),
    "rarer password": lambda: pick(passwords),
    "word + digits": lambda: pick(words, 5000) + str(rng.randint(0, 9999)),
    "Capitalised word + symbol": lambda: pick(words, 5000).capitalize() + rng.choice("!?.#$*") + str(rng.randint(0, 99)),
    "name + year": lambda: pick(names, 2000).capitalize() + str(rng.randint(1950, 2025)),
    "keyboard walk": keyboard_walk,
    "date": lambda: rng.choice(["{d:02d}/{m:02d}/{y}", "{d}{m:02d}{y}", "{y}-{m:02d}-{d:02d}", "{m}.{d}.{y2:02d}"]).format(
        d=rng.randint(1, 28), m=rng.randint(1, 12), y=rng.randint(1950, 2025), y2=rng.randint(0, 99)),
    "year": lambda: str(rng.randint(1900, 2030)),
    "l33t word": lambda: leet(pick(words, 3000)),
    "random lowercase": lambda: "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 14))),
    "random mixed": lambda: "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(6, 16))),
    "random printable": lambda: "".join(rng.choice(string.ascii_letters + string.digits + "!@#$%^&*()-_=+[]{};:,.<>/?")
                                        for _ in range(rng.randint(6, 20))),
    "passphrase": lambda: rng.choice([" ", "-", "", "."]).join(pick(words, 10000) for _ in range(rng.randint(2, 5))),
    "repeat": lambda: rng.choice([rng.choice(string.ascii_lowercase + string.digits) * rng.randint(4, 12),
                                  pick(words, 500) * rng.randint(2, 3)]),
    "sequence": lambda: (lambda alphabet, start, n, step: "".join(alphabet[(start + i * step) % len(alphabet)] for i in range(n)))(
        rng.choice([string.ascii_lowercase, string.digits]), rng.randint(0, 9), rng.randint(4, 10), rng.choice([1, -1])),
}

corpus, seen = [], set()
per_kind = 200
for kind, make in generators.items():
    made = attempts = 0
    while made < per_kind and attempts < 50 * per_kind:  # some kinds have few distinct values
        attempts += 1
        password = make()
        if password in seen or "\t" in password or "\n" in password:
            continue
        seen.add(password)
        corpus.append(password)
        made += 1

lines = []
for password in corpus:
    result = zxcvbn(password)
    lines.append(f"{password}\t{result['score']}\t{float(result['guesses_log10']):.3f}")
out = Path(__file__).with_name("reference-scores.tsv")
out.write_text("\n".join(lines) + "\n", encoding="utf-8")
print(f"wrote {len(lines)} passwords to {out}")
