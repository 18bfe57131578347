"""A note's list of accounts and codes, one per line, each after its label: "- Router admin: admin /
R0uter!2024" (a user and a password), "- Garage door: 2468", "- Gym locker: 3812", "- Safe: 12-34-56"
(a code or a combination named by what it opens). People keep such lists in their memory files;
no credential word is written, the label and the line's shape say what the value is.
"""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import is_template, looks_like_password, redact_group, sub_values

# "label: user / password" ending its line, a space after the colon; the password must look like
# one ("Ratio: 3 / 4", "Path: src / main", "data:image/png;base64,..." stay).
LIST_LOGIN_RE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?[^:\n/]{1,40}:[ \t]+(?:[^\s/:@\"'`,|]{2,64}|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
    r"[ \t]*/[ \t]*(?P<value>[^\s\"'`|/]{4,200})[ \t]*$",
    re.M,
)
# "- Garage door: 2468", "- Gym locker (blue): 3812", "- Safe: 12-34-56": a list item naming what a
# code opens, the code alone after its colon (ending its line, or a note, a clause or the next item
# follows: "(changed in May)", ", ...", " - ..."). Not an alarm, whose number may be the time it
# rings ("Alarm: 0630"), nor a building ("Building: 1984").
LIST_CODE_RE = re.compile(
    r"^[ \t]*[-*+][ \t]+(?:[\w'’-]+[ \t]+){0,2}?(?i:door|gate|locker|safe|padlock|lockbox|keypad|garage)"
    r"(?:[ \t]+(?i:door|code|combo|combination))?[ \t]*(?:\([^)\n]{1,30}\))?[ \t]*[:：][ \t]*"
    r"(?P<value>\d{4,8}|\d{1,3}(?:-\d{1,3}){2,4})(?=[ \t]*(?:$|[(,;.]|[–—-][ \t]))",
    re.M,
)


def apply_note_lists(text: str, counts) -> str:
    """Both rules above, on text holding a colon at all."""
    if ":" not in text:
        return text

    def login(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        return None if is_template(value) or not looks_like_password(value) else redact_group(match, group, "password", counts)

    def code(match: re.Match[str], group: str) -> str | None:
        kind = "combination" if "-" in match.group(group) else "access_code"
        return redact_group(match, group, kind, counts)

    if "/" in text:
        text = sub_values(LIST_LOGIN_RE, text, login, "value")
    return sub_values(LIST_CODE_RE, text, code, "value")
