#!/usr/bin/env python3
"""Writes common-passwords.txt, the blocklist behind `password.common`.

Source: the "passwords" frequency list of the zxcvbn project (Dropbox, MIT licence, see
LICENSE-zxcvbn.txt), as shipped in PyPI's zxcvbn 4.5.0: the 30,000 most used passwords
of public breach corpora, most frequent first. One password per line, lower case.

    pip install zxcvbn==4.5.0 && python3 generate-common-passwords.py
"""
from pathlib import Path

from zxcvbn.frequency_lists import FREQUENCY_LISTS

passwords = FREQUENCY_LISTS["passwords"]
out = Path(__file__).with_name("common-passwords.txt")
out.write_text("\n".join(p.lower() for p in passwords) + "\n", encoding="utf-8")
print(f"wrote {len(passwords)} passwords to {out}")
