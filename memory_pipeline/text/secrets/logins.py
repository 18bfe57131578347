"""A password given to log in with, where no credential word names it: "use Tr1ckyPass! to log
in to the router", "log in as admin with Xk9#mP2qL", "sign in with Summer2024!", "I log in with
admin and Netgear#55".

Without the word only a value a person chose or a generator made is taken (``chosen_login``): it
mixes letters and digits, and holds a symbol, a digit before a lower-case letter inside a
mixed-case word ("Tr1ckyPass", not "YubiKey5C"), or enough randomness. "Sign in with Google",
"log in with Office365", "log in with your email" and "unlock it with the code from the app" stay
as they are.
"""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import is_template, looks_random, redact_group, sub_values

LOGIN_PASSWORD = "password"
_LOGIN = r"(?:log(?:ged|ging|s)?[ -]?(?:in|on)|login|sign(?:ed|ing|s)?[ -]?in|signin|authenticate|unlock)"
_VALUE = r"(?P<value>[^\s\"'`]{6,64})"
# "log in [as admin | to the router] with X": at most five words between, within the sentence.
_AFTER_RE = re.compile(
    rf"(?<![\w-])(?i:{_LOGIN})(?:[ \t]+[^\s.!?;:]{{1,40}}){{0,5}}?[ \t]+(?i:with|using)"
    rf"[ \t]+(?:(?i:the|my|this)[ \t]+)?(?:(?i:pass|code)[ \t]+)?(?:[^\s\"'`]{{1,64}}[ \t]+(?i:and|/)[ \t]+)?{_VALUE}"
)  # (a user may come first: "I log in with admin and Netgear#55")
# "use X to log in", "type X and sign in"
_BEFORE_RE = re.compile(
    rf"(?<![\w-])(?i:use|type|enter|try|put in)[ \t]+{_VALUE}[ \t]+(?i:to|and|when you|then)[ \t]+(?:(?i:you[ \t]+))?"
    rf"(?i:{_LOGIN})(?![\w-])"
)
_HINTS = ("log", "sign", "unlock", "authenticate")
_TRAILING = ".,;:?)]}>"  # what may end the sentence after the value ("!" may be part of it)
_SYMBOLS = set("!@#$%^&*+=~?|")


def chosen_login(value: str) -> bool:
    """Whether a value given to log in with is a password: letters and digits, and a symbol, a
    digit inside a mixed-case word ("Tr1ckyPass"), or a random look; not an address or a path."""
    if is_template(value) or "@" in value or "/" in value or "." in value:
        return False
    if not any(c.isalpha() for c in value) or not any(c.isdigit() for c in value):
        return False
    if _SYMBOLS & set(value):
        return True
    inner = any(value[i].isdigit() and value[i - 1].isalpha() and value[i + 1].islower() for i in range(1, len(value) - 1))
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return (inner and mixed) or looks_random(value, 12)


def apply_logins(text: str, counts) -> str:
    """Every value given to log in with that ``chosen_login`` takes."""
    low = text.lower()
    if not any(hint in low for hint in _HINTS):
        return text

    def substitute(match: re.Match[str], group: str) -> str | None:
        value = match.group(group).rstrip(_TRAILING)
        if len(value) < 6 or not chosen_login(value):
            return None
        return redact_group(match, group, LOGIN_PASSWORD, counts, len(value))

    for pattern in (_AFTER_RE, _BEFORE_RE):
        text = sub_values(pattern, text, substitute, "value")
    return text
