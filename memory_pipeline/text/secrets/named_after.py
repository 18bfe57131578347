"""A password named after its value: "I use 'ilovemycat' as my password", "Tr0ub4dor&3 is the new
wifi password". The value comes before the credential word, so this pass reads the text before
each "as ... password" rather than after a credential word (``secrets.prose``)."""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import (
    TRAILING_PUNCTUATION,
    is_template,
    looks_like_password,
    redact_group,
    spans_around,
    sub_values_in,
)
from memory_pipeline.text.secrets.prose import PASSWORD_WORDS

# A password named after its value: "I use 'ilovemycat' as my password", "Tr0ub4dor&3 is the new
# wifi password", "I'll use X for the password"; the credential word ends the phrase ("as my
# password manager" names no password).
AS_PASSWORD_RE = re.compile(
    r"(?:(?P<q>[\"'`“‘])(?P<quoted>[^\"'`”’\n]{4,200})[\"'`”’]|(?<![^\s(])(?P<bare>[^\s\"'`]{4,200}))"
    rf"[ \t]+(?i:as|for|is|was|will be)[ \t]+(?:(?i:my|the|our|your|his|her|their|a|an|its)[ \t]+)(?:[\w-]+[ \t]+){{0,2}}?(?i:{PASSWORD_WORDS})"
    r"(?=[ \t]*(?:[.,;:!?)]|$)|[ \t]+(?:for|on|everywhere|and|but|so|because|since|at|in|now|too|again|from|until)\b)"
)
AS_PASSWORD_HINT_RE = re.compile(rf"\b(?:as|for|is|was|be)[ \t]+\w+[ \t]+(?:[\w-]+[ \t]+){{0,2}}?(?i:{PASSWORD_WORDS})", re.IGNORECASE)


def apply_named_after(text: str, counts) -> str:
    """"I use 'ilovemycat' as my password": the value comes before the credential word, so this
    pass reads the text before each "as ... password" rather than after a credential word."""

    def substitute(match: re.Match[str], group: str) -> str | None:
        # a quoted value is the whole quote ("Gr8Summer!"); a bare one ends before its sentence's punctuation
        value = match.group(group) if group == "quoted" else match.group(group).rstrip(TRAILING_PUNCTUATION)
        if is_template(value) or "://" in value or not (looks_like_password(value) or group == "quoted" and len(value) >= 6):
            return None
        return redact_group(match, group, "password", counts, len(value))

    spans = spans_around(text, AS_PASSWORD_HINT_RE, 210, 40)
    return sub_values_in(text, spans, AS_PASSWORD_RE, substitute, "quoted", "bare")
