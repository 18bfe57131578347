"""Secret scrubbing: replace credentials with typed placeholders before any text is stored.

``scrub_secrets`` runs our own compiled patterns over the whole text (most anchored on a
literal prefix, so a pass over ordinary prose is a fast substring search), then the
regex-based detectors of detect-secrets (``secrets.detectors``: SendGrid, Twilio, PyPI, Azure,
Discord, IBM and other formats we do not spell out) over the text around long token-like runs
only, then the
``password = value`` style assignments (also glued inside environment names such as
``PGPASSWORD``), then the families of ``secrets.families`` (vendor prefixes, flags and XML
elements, an AWS secret beside its key id, random tokens that are not structured data, see
``secrets.lookalikes``), of ``secrets.configs`` (.pgpass lines, a credential named in one field and
held in another, tables with a credential column), of ``secrets.phrases`` (a wallet recovery
phrase by its words) and of ``secrets.prose`` ("my password is X" in many languages and scripts),
then the caller's extra patterns. JSON strings written with escapes are first scrubbed as decoded,
and in a transcript's JSON lines each message is read after the one before it (a value given
alone after "What is the wifi password?").

The number of lines never changes: a multi-line secret such as a PEM private key is replaced by
its placeholder followed by the line breaks it spanned, so chunk line ranges computed on the
scrubbed text still cite the source file exactly.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_pipeline.text.secrets.changes import apply_changes
from memory_pipeline.text.secrets.configs import apply_config_formats, apply_json_strings, apply_replies, apply_tables
from memory_pipeline.text.secrets.detectors import apply_detect_secrets
from memory_pipeline.text.secrets.families import (
    TRAILING_PUNCTUATION,
    apply_aws_pairs,
    apply_labelled,
    apply_random_tokens,
    apply_vendor_prefixes,
    looks_like_password,
    looks_random,
    redact_group,
    spans_around,
    sub_values_in,
)
from memory_pipeline.text.secrets.lexicon import plain_word
from memory_pipeline.text.secrets.lists import apply_note_lists
from memory_pipeline.text.secrets.logins import apply_logins
from memory_pipeline.text.secrets.named_after import apply_named_after
from memory_pipeline.text.secrets.phrases import apply_seed_phrases
from memory_pipeline.text.secrets.prose import apply_prose, asked_for

CUSTOM = "custom"
SCRUB_VERSION = 14
"""Bump when scrubbing finds more: indexed files and extracted typed memories are read again, so a
secret an earlier version let through leaves the stored memory at the next run."""


@dataclass(frozen=True)
class ScrubResult:
    text: str
    counts: dict[str, int]  # placeholder type -> number replaced, e.g. {"aws_access_key": 1}


# --- Assignments ("password = value") ---------------------------------------------------------
_ASSIGNMENT_RE = re.compile(
    # The lookahead lets re skip most positions before it tries the case-insensitive keywords.
    r"(?=[PpSsTtAaCcKk])(?i:(?P<kw>passphrase|password|passwd|pass|pwd|psk|secret|token|api[_-]?key|"
    r"access[_-]?key|auth[_-]?key|private[_-]?key|credentials?|signature|sig|auth|key))"
    r"(?P<rest>[\w.-]{0,40}?)[\"'\\\]]{0,3}[ \t]*(?P<op>=>|:=|=|:)[ \t]*"
    r"(?:\\?\"(?P<dq>(?:[^\"\\\n]|\\[^\"\n]){1,4096}?)\\?\""
    r"|\\?'(?P<sq>[^'\\\n]{1,4096}?)\\?'"
    r"|(?P<bare>[^\s\"'`,;\\]{1,4096}))"
)

_VALUE_GROUPS = ("dq", "sq", "bare")
_WORDISH = re.compile(r"[A-Za-z]+")
# Values that stand for a secret without being one: templates, environment references, code.
_PLACEHOLDER_VALUE_RE = re.compile(
    r"(?:\$\{|(?-i:\$[A-Z_][A-Z0-9_]*$)|<|\{|%|\[|\*{3}|x{6}|\.\.\.|redacted|your[_-]"
    r"|os\.|process\.env|env\.|getenv|settings\.|config\.|self\."
    r"|none$|null$|true$|false$|undefined$|[a-z][a-z0-9+.-]*://)",
    re.IGNORECASE,
)
# Code, not a value: a constant's name (APPLE_CLIENT_SECRET), an index or a call
# (responseData["access_token"], get_token()).
_CODE_VALUE_RE = re.compile(r"[A-Z][A-Z]+(?:_[A-Z]+)+|[A-Za-z_$][\w$.]*(?:\[.*|\(.*)")
_MIN_ASSIGNED_SECRET = 8
_OPERATOR_RE = re.compile(r"(?<=[\w\"'\]\\ \t])[:=]+")
_KEYWORD_STEMS = ("pass", "pwd", "psk", "secret", "token", "key", "credential", "sig", "auth")
# Keywords that also name ordinary things ("key: id", "auth: oauth2", "sig: figure 3"): their
# value must look generated.
_WEAK_KEYWORDS = ("key", "auth", "sig", "signature")
_KEY_REACH = 80  # keyword, identifier suffix, quotes and spaces before the operator
_VALUE_REACH = 4120  # spaces, quotes and a value of up to 4,096 characters after it (session tokens run long)
_PASSWORD_KEYWORDS = ("pass", "pwd", "psk")


def _standalone(match: re.Match[str], group: int = 0) -> bool:
    """True when the token is not glued to letters or digits on either side."""
    text, start, end = match.string, match.start(group), match.end(group)
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or after.isalnum())


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _token_check(match: re.Match[str]) -> bool:
    # sk-<20+ chars> also occurs inside hyphenated words ("task-..."): demand a boundary and a
    # mix of digits and letters, which a real key has and a phrase does not.
    return _standalone(match) and _has_digit_and_letter(match.group(0))


# How card numbers are written: unbroken, or in the groups printed on the card.
_CARD_GROUPS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4)}


# A card named just before its number, in its sentence: "my card is ...", "visa ...", "CC: ...".
_CARD_NAMED_RE = re.compile(
    r"(?i:\b(?:card|visa|mastercard|master card|amex|american express|discover|cc)\b)[^.!?\n\d]{0,24}\Z"
)

# A card, its expiry or its redacted number earlier in the sentence (for a security code after them).
_CARD_BEFORE_RE = re.compile(r"(?i:\b(?:card|exp(?:iry|ires|iration)?)\b|\[REDACTED:payment_card\])[^.!?\n]*\Z")


def _card_check(match: re.Match[str]) -> bool:
    """A payment card number: 13-19 digits whose last is the Luhn check digit, unbroken or in the
    card's own groups (a phone number, an order id or a millisecond time stamp rarely is both);
    or, named as a card just before it, 15 or 16 digits whatever the last (a number typed by hand,
    or mistyped, is still the card's)."""
    value = match.group(0)
    groups = tuple(len(g) for g in re.split(r"[ -]", value))
    if len(groups) > 1 and (groups not in _CARD_GROUPS or len(set(re.findall(r"[ -]", value))) > 1):
        return False
    digits = [int(c) for c in value if c.isdigit()]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    if 13 <= len(digits) <= 19 and total % 10 == 0:
        return True
    return len(digits) in (15, 16) and _CARD_NAMED_RE.search(match.string, max(0, match.start() - 40), match.start()) is not None


def _iban_check(match: re.Match[str]) -> bool:
    """A bank account number (IBAN): its country's length and layout, and the mod-97 check digits."""
    from stdnum import iban

    return _standalone(match) and iban.is_valid(match.group(0))


def _url_password_check(match: re.Match[str]) -> bool:
    return not _PLACEHOLDER_VALUE_RE.match(match.group(2))


def _keyword_boundary(text: str, start: int, end: int) -> bool:
    """The keyword is a whole part of its identifier (snake, kebab, dotted or camel case)."""
    first, last = text[start], text[end - 1]
    if start:
        before = text[start - 1]
        if before.isalpha() and not (before.islower() and first.isupper()):
            return False
    if end < len(text):
        after = text[end]
        if after.isalpha() and not (last.islower() and after.isupper()):
            return False
    return True


def _assignment_type(match: re.Match[str]) -> str | None:
    """The placeholder type for ``password = value`` style matches, None to leave it."""
    text = match.string
    start, end = match.span("kw")
    placeholder_at = text.rfind("[REDACTED:", max(0, start - 40), start)
    if placeholder_at >= 0 and "]" not in text[placeholder_at:start]:
        return None  # the keyword is a placeholder's type ("[REDACTED:api_token]")
    if "REDACTED" in match.group(0)[end - match.start() :]:
        return None
    value = match.group("dq") or match.group("sq") or match.group("bare") or ""
    if _PLACEHOLDER_VALUE_RE.match(value) or _CODE_VALUE_RE.fullmatch(value):
        return None
    keyword = match.group("kw").lower()
    password = keyword.startswith(_PASSWORD_KEYWORDS)
    # A keyword glued inside a longer name counts in an environment variable (PGPASSWORD,
    # MYSQL_PWD) or at the end of a name (dbpassword, clientSecret), with a value that looks
    # chosen or generated; "passport", "keyboard" or "tokenizer" are other words.
    strict = keyword in _WEAK_KEYWORDS
    if not _keyword_boundary(text, start, end):
        env = _env_name(text, start, end)
        if not env and (text[end : end + 1].isalpha() or not any(c.isdigit() for c in value)):
            return None
        strict = True
    if password and _plain_password(match, value):
        return "password"
    if len(value) < _MIN_ASSIGNED_SECRET:
        return None
    if strict and not (looks_random(value, 8) or (password and looks_like_password(value))):
        return None
    # A single word ("password: required") is prose; a real secret mixes character kinds.
    if len(value) < 16 and _WORDISH.fullmatch(value.rstrip(".,!?)")):
        return None
    return "password" if password else "secret"


_VALUE_END_RE = re.compile(r"[ \t]*(?:$|[\r\n,;}\]\\])", re.M)
# What may stand before a setting's key on its line: nothing, a list's dash, "export", or the
# comma or brace before a key of an object; then the rest of the key's name ("DB_", "admin").
_KEY_OPENS_RE = re.compile(r"(?:^[ \t]*(?:[-*>][ \t]*)?(?:(?:export|set|ENV)[ \t]+)?\\?[\"']?|[,{][ \t]*\\?[\"']?)[\w.-]*\Z", re.M)


_KEY_REACH = 256  # characters of a setting's line before its password word: indent, "export", name


def _plain_password(match: re.Match[str], value: str) -> bool:
    """A short or plain value given to a key that ends in a password word, the key starting a
    setting: a thing's name or a made-up word ending the line ("db_password: sunshine", "pass:
    changeme", ``lexicon.plain_word``), or 4+ characters with a digit, a symbol or mixed case set
    by "=" or quoted ("password=abc123", ``PASSWORD = "Tr0ub4"``)."""
    if match.group("rest"):
        return False  # the key names something of the password's ("password_algorithm = argon2")
    text, start = match.string, match.start("kw")
    # (the key's opening and name end at the keyword: a bounded look back keeps a long line linear)
    reach = max(0, start - _KEY_REACH)
    if not _KEY_OPENS_RE.search(text, max(text.rfind("\n", reach, start) + 1, reach), start):
        return False  # words around an "=" ("the agent and password = tea."), not a setting
    word = value.rstrip(".,!?)")
    ends = _VALUE_END_RE.match(text, match.end())  # as a setting's value does
    if ends and plain_word(word):
        return True
    set_so = match.group("op") in ("=", ":=") or match.group("bare") is None
    return set_so and looks_like_password(value.rstrip(TRAILING_PUNCTUATION))


def _env_name(text: str, start: int, end: int) -> bool:
    """The keyword sits in an upper-case environment-style name such as ``PGPASSWORD``."""
    lo, hi = start, end
    while lo and (text[lo - 1].isalnum() or text[lo - 1] == "_"):
        lo -= 1
    while hi < len(text) and (text[hi].isalnum() or text[hi] == "_"):
        hi += 1
    name = text[lo:hi]
    return name.isupper() and len(name) <= 64


# --- Our own patterns --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    check: Callable[[re.Match[str]], bool] | None = None


# Each rule: (type, pattern, group holding the secret (0: the whole match), check), in the order
# they run. Patterns start with a literal where they can, so that re finds candidates by substring
# search; word boundaries are checked in Python on the few candidates instead of in the pattern.
_TOKEN = r"[A-Za-z0-9_\-]"
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", re.compile(
        r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----"
        # The body runs to the next BEGIN or END marker (possessive: linear however many keys).
        r"(?:(?:[^-]++|-(?!----(?:BEGIN|END) ))*+-----END \1PRIVATE KEY\2-----"
        # A key pasted without its END line: the header and base64 lines after the BEGIN line,
        # also inside a JSON string where the line breaks are written "\n".
        r"|(?:(?:\\n|\r\n|\n|\r)[ \t>]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\r\n\\]{1,200})[ \t]*)*)"
    )),
    # The user may be empty ("redis://:password@host").
    _Rule("url_password", re.compile(r"://([^\s:/?#@\[\]\"'<>]{0,256}):([^\s/\"'<>]{1,256})@(?=[\w\[])"),
          2, _url_password_check),
    # Cards begin with 2-6 (Mastercard, Amex, Visa, Discover); a millisecond time stamp with 1.
    _Rule("payment_card", re.compile(r"(?=[2-6]\d{3}[ -]?\d{4})(?<![\w.+\]-])[2-6]\d{3}(?:[ -]?\d){9,15}(?![\w-])"),
          0, _card_check),
    # Country code, check digits and the account, unbroken or in groups of four ("DE89 3704 ...").
    _Rule("iban", re.compile(r"[A-Z][A-Z]\d\d(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?"), 0, _iban_check),
    # The code on the back, when it is handed over by its name. Neither rule starts right after
    # a placeholder, which an earlier rule may have put where a key was glued to it.
    _Rule("card_code", re.compile(
        r"(?=[CcSs])(?<![\w\]-])(?i:(?:cvv2?|cvc2?|csc)(?:[ \t]+on the back)?|card security code"
        r"|security code on the back(?: of (?:the|my|your|his|her) card)?)[ \t]*(?:is|:|=|#)?[ \t]*(\d{3,4})(?!\d)"
    ), 1),
    # ... or a security code where a card or its expiry was named just before: "card ... exp 09/26
    # security code 482" (a website's "security code 4821" names no card).
    _Rule("card_code", re.compile(r"(?=[Ss])(?<![\w\]-])(?i:security code)[ \t]*(?:is|:|=|#)?[ \t]*(\d{3,4})(?!\d)"),
          1, lambda m: _CARD_BEFORE_RE.search(m.string, max(0, m.start() - 60), m.start()) is not None),
    _Rule("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}")),
    _Rule("anthropic_key", re.compile(r"sk-ant-" + _TOKEN + r"{20,}"), 0, _standalone),
    _Rule("openai_key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?" + _TOKEN + r"{20,}"), 0, _token_check),
    _Rule("github_token", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"), 0, _standalone),
    _Rule("gitlab_token", re.compile(r"gl(?:pat|dt|rt|ft|soat|ptt)-" + _TOKEN + r"{20,}"), 0, _standalone),
    _Rule("slack_token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"), 0, _token_check),
    _Rule("stripe_key", re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0, _standalone),
    _Rule("google_api_key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), 0, _standalone),
    _Rule("npm_token", re.compile(r"npm_[A-Za-z0-9]{36}"), 0, _standalone),
    # Braintree's access token: "$" ends the runs the vendor families read, so it is spelled here.
    _Rule("braintree_token", re.compile(r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}"), 0, _standalone),
    _Rule("npm_token", re.compile(r"_authToken=[ \t]*[\"']?([A-Za-z0-9_\-.]{20,})"), 1,
          lambda m: _has_digit_and_letter(m.group(1))),
    _Rule("aws_access_key", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"), 0, _standalone),
    _Rule("aws_secret_key", re.compile(
        r"(?i:aws)[\w.-]{0,20}?(?i:secret)[\w.-]{0,20}?[\"'\\]{0,3}[ \t]*(?:=>|:=|=|:)[ \t]*"
        r"[\"'\\]{0,2}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
    ), 1),
    # Possessive runs, and a start only at a token boundary: "eyJeyJeyJ..." must stay linear.
    _Rule("jwt", re.compile(
        r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]*+"
    ), 0, _standalone),
    _Rule("bearer_token", re.compile(
        r"(?:[Bb](?i:earer)|(?<=[:=] )Token|(?<=[:=] )token)[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)"
    ), 1, lambda m: _standalone(m, 0)),
    _Rule("basic_auth", re.compile(
        r"[Aa](?i:uthorization)[\"'\\]{0,3}[ \t]*[:=][ \t]*[\"'\\]{0,2}(?i:basic)[ \t]+"
        r"([A-Za-z0-9+/]{8,}=*)"
    ), 1),
)


def _apply(text: str, rule: _Rule, counts: Counter[str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        if rule.check is not None and not rule.check(match):
            return match.group(0)
        return _replace_group(match, rule.group, rule.kind, counts)

    return rule.pattern.sub(substitute, text)


def _replace_group(match: re.Match[str], group: int | str, kind: str, counts: Counter[str]) -> str:
    start, end = match.span(group)
    return match.group(0) if end <= start else redact_group(match, group, kind, counts)


def _apply_assignments(text: str, counts: Counter[str]) -> str:
    def substitute(match: re.Match[str], group: str) -> str | None:
        kind = _assignment_type(match)
        return None if kind is None else _replace_group(match, group, kind, counts)

    # The keyword alternation is slow to try at every position of a megabyte of prose, and an
    # assignment always has its operator: look only around ":" and "=" signs that have a
    # keyword shortly before them.
    def keyword_before(match: re.Match[str]) -> bool:
        before = text[max(0, match.start() - _KEY_REACH) : match.start()].lower()
        return any(stem in before for stem in _KEYWORD_STEMS)

    spans = spans_around(text, _OPERATOR_RE, _KEY_REACH, _VALUE_REACH, keyword_before)
    return sub_values_in(text, spans, _ASSIGNMENT_RE, substitute, *_VALUE_GROUPS)


# --- Entry point -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _compile_extra(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"invalid extra secret pattern {pattern!r}: {exc}") from None
    return tuple(compiled)


def _scrub_decoded(value: str, after: str = "") -> tuple[str, dict[str, int]]:
    """A decoded JSON string (a transcript's message: read after the message before it)."""
    result = scrub_secrets(value, after=after)
    return result.text, result.counts


def scrub_secrets(text: str, extra_patterns: Sequence[str] = (), after: str = "") -> ScrubResult:
    """Replace secrets in ``text`` with ``[REDACTED:<type>]`` and count them by type.

    ``extra_patterns`` are regular expressions for site-specific secrets; their matches are
    replaced with ``[REDACTED:custom]`` (a pattern with groups replaces only its first group).
    ``after`` is what was said just before (the previous turn of a chat, already scrubbed): when
    its last sentence asks for a credential, ``text`` is read as the sentence after it, so a value
    given alone ("It's BlueSky2024!") is found. Line breaks are preserved, so the output has
    exactly as many lines as the input. Raises ValueError only for an extra pattern that does not
    compile.
    """
    if after and text and (lead := asked_for(after)):
        joined = scrub_secrets(f"{lead} {text}", extra_patterns)
        if joined.text.startswith(f"{lead} "):
            return ScrubResult(joined.text[len(lead) + 1 :], joined.counts)
    extras = _compile_extra(tuple(extra_patterns))
    counts: Counter[str] = Counter()
    if not text:
        return ScrubResult(text, {})
    if "\\" in text and '"' in text:
        text = apply_json_strings(text, counts, _scrub_decoded)
    if '"content"' in text and "\n" in text:
        text = apply_replies(text, counts, _scrub_decoded)
    for rule in _RULES:
        text = _apply(text, rule, counts)
    text = apply_vendor_prefixes(text, counts)
    text = apply_detect_secrets(text, counts)
    text = _apply_assignments(text, counts)
    text = apply_labelled(text, counts)
    text = apply_config_formats(text, counts)
    text = apply_tables(text, counts)
    text = apply_seed_phrases(text, counts)
    text = apply_prose(text, counts)
    text = apply_changes(text, counts)
    text = apply_named_after(text, counts)
    text = apply_logins(text, counts)
    text = apply_note_lists(text, counts)
    text = apply_aws_pairs(text, counts)
    text = apply_random_tokens(text, counts)
    for pattern in extras:
        group = 1 if pattern.groups else 0
        text = _apply(text, _Rule(CUSTOM, pattern, group), counts)
    return ScrubResult(text, dict(counts))
