#!/usr/bin/python3
"""ICU's own answers, through PyICU (Debian's python3-icu), for the tests to hold the
server's against: a reference we did not write, reading the same CLDR data.

  icu_reference.py dates MILLISECONDS TAG…   {"de": "3. Nov. 2026, 10:00 UTC", …}
  icu_reference.py lists TAG… -- ITEM…       {"de": "a, b und c", …}

A tag is the project's ("pt-br", "zh-hans"); Arabic is asked for with Western digits
(`ar@numbers=latn`), as docs/LANGUAGES.md says the server writes its numbers. A date is
ICU's best pattern for day, abbreviated month, year, the language's hour cycle and the zone
(skeleton "yMMMdjmmz"), in UTC.
"""
import json
import sys

import icu


def locale(tag):
    parts = tag.split("-")
    rest = [part.title() if len(part) == 4 else part.upper() for part in parts[1:]]
    name = "_".join([parts[0].lower()] + rest)
    return icu.Locale(name + "@numbers=latn" if parts[0].lower() == "ar" else name)


def dates(milliseconds, tags):
    out = {}
    for tag in tags:
        where = locale(tag)
        pattern = icu.DateTimePatternGenerator.createInstance(where).getBestPattern("yMMMdjmmz")
        formatter = icu.SimpleDateFormat(pattern, where)
        formatter.setTimeZone(icu.TimeZone.createTimeZone("UTC"))
        out[tag] = formatter.format(milliseconds / 1000.0)
    return out


def lists(tags, items):
    return {tag: icu.ListFormatter.createInstance(locale(tag)).format(items) for tag in tags}


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "dates":
        print(json.dumps(dates(float(arguments[0]), arguments[1:]), ensure_ascii=False))
    elif command == "lists":
        split = arguments.index("--")
        print(json.dumps(lists(arguments[:split], arguments[split + 1:]), ensure_ascii=False))
    else:
        sys.exit(f"unknown command {command}")
