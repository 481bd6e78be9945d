#!/usr/bin/env python3
"""Writes the word lists the Zxcvbn module ships, from PyPI's zxcvbn 4.5.0 (MIT, see
LICENSE-zxcvbn.txt):

- passwords.txt: the 30,000 most used passwords of public breaches, most used first. The
  app's `password.common` blocklist, and how feedback tells "a common password" apart.
- names.txt: first names and surnames, so feedback can say "a name" (zxcvbn-c merges all
  its dictionaries and cannot say which one matched).

One entry per line, lower case.

    pip install zxcvbn==4.5.0 && python3 generate-word-lists.py
"""
from pathlib import Path

from zxcvbn.frequency_lists import FREQUENCY_LISTS

here = Path(__file__).parent


def write(name, words):
    (here / name).write_text("\n".join(w.lower() for w in words) + "\n", encoding="utf-8")
    print(f"wrote {len(words)} entries to {name}")


write("passwords.txt", FREQUENCY_LISTS["passwords"])
names = []
for key in ("male_names", "female_names", "surnames"):
    names.extend(w for w in FREQUENCY_LISTS[key] if w not in names)
write("names.txt", names)
