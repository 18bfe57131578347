"""A password handed over as a change or a correction, without the verb the prose rules read: "I
set the admin pass to hunter2", "the old password was X and the new one is Y", "the password is
Fl0werP0t, not Fl0werPot"; and "pass" a few words before a colon ("my apple id pass for me: X").
Each rule reads only the text around the words it needs ("pass to", "new one", a password already
redacted), so it runs after ``secrets.prose``."""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import TRAILING_PUNCTUATION, redact_group, spans_around, sub_values_in
from memory_pipeline.text.secrets.prose import PASSWORD_WORDS, chosen_secret

# "pass" set or changed to a value: "I set the admin pass to hunter2", "we changed the wifi pass to
# Maple2024" (alone "pass" is also a ticket, a road or a verb: the value must look chosen).
SET_PASS_RE = re.compile(
    r"(?<![\w-])(?i:set|changed|reset|updated|switched)[ \t]+(?:(?i:the|my|our|your|his|her|their)[ \t]+)?"
    r"(?:[\w-]+[ \t]+){0,2}?(?i:pass)[ \t]+(?i:to)[ \t]+(?P<value>[^\s\"'`]{4,200})"
)
# ... or handed over by a colon a few words on: "my apple id pass for me: Br0wnie$2020" (the value
# must look chosen with mixed case or a symbol: "bus pass for May: Monthly2024" stays).
PASS_COLON_RE = re.compile(r"(?<![\w-])(?i:pass)(?:[ \t]+[^\s:]{1,20}){0,3}?[ \t]*:[ \t]*(?P<value>[^\s\"'`]{4,200})")
# ... and the new one said after the old: "the old password was X and the new one is Y".
NEW_ONE_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:{PASSWORD_WORDS})[^.!?\n]{{0,80}}?[ \t](?i:the[ \t]+)?(?i:new[ \t]+one)"
    r"(?:[ \t]+(?i:is|was|will be)[ \t]+|[ \t]*:[ \t]*)(?P<value>[^\s\"'`]{4,200})"
)
# A password corrected: "the password is Fl0werP0t, not Fl0werPot" (the wrong one is nearly the right one).
NOT_THAT_RE = re.compile(
    r"\[REDACTED:password\][\"'”’]?[ \t]*,?[ \t]+(?i:not|instead of|rather than)[ \t]+[\"'“‘]?(?P<value>[^\s\"'`”’]{4,200})"
)

# The words each rule needs, around which it reads.
_SET_PASS_HINT_RE = re.compile(r"(?i:pass)[ \t]+(?i:to)\b")
_PASS_COLON_HINT_RE = re.compile(r"(?i:pass)\b[^:\n]{0,60}:")
_NEW_ONE_HINT_RE = re.compile(r"(?i:new)[ \t]+(?i:one)\b")
_NOT_THAT_HINT_RE = re.compile(re.escape("[REDACTED:password]"))


def apply_changes(text: str, counts) -> str:
    """The four rules above, each where its words are; the value must look chosen ("hunter2", not a
    version, a date or a path)."""

    def chosen(match: re.Match[str], group: str, first: bool = True) -> str | None:
        value = match.group(group).rstrip(TRAILING_PUNCTUATION)
        return redact_group(match, group, "password", counts, len(value)) if chosen_secret(value, first=first) else None

    for pattern, words, before, after, substitute in (
        (SET_PASS_RE, _SET_PASS_HINT_RE, 80, 220, chosen), (NEW_ONE_RE, _NEW_ONE_HINT_RE, 200, 220, chosen),
        (NOT_THAT_RE, _NOT_THAT_HINT_RE, 0, 240, chosen),
        (PASS_COLON_RE, _PASS_COLON_HINT_RE, 0, 280, lambda m, g: chosen(m, g, first=False)),
    ):
        spans = spans_around(text, words, before, after)
        if spans:
            text = sub_values_in(text, spans, pattern, substitute, "value")
    return text
