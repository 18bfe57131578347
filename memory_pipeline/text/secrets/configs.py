"""Secrets that a file format, not a label beside them, marks: connection files and configuration
blocks where the credential's name and its value are two fields apart.

- A ``.pgpass`` line, ``host:port:database:user:password``: the fifth field is a password.
- A named credential and its value in separate fields: Terraform/HCL (``variable "db_password"
  { default = "..." }``), Kubernetes and Compose environment lists (``- name: DB_PASSWORD`` then
  ``value: ...``), AWS task definitions and Postman environments (``{"name": "API_TOKEN",
  "value": "..."}``, ``"key": ..., "value": ...``). The name is any field value that names a
  credential; the value is the next ``value``/``default``-like field within a few lines, before
  another name starts.

Values are checked like every other family's (``looks_like_password`` or ``looks_random``), and
templates (``${var.x}``, ``{{ .Values.x }}``) are left alone.

An HTTP cookie header's values (``Cookie: sessionid=...``) are a session's bearer credentials,
whatever their names.

A table (Markdown, CSV or tab-separated) whose header names a credential column has that column's
cells redacted in the rows below it (``apply_tables``).

Text inside a JSON string is also read the way its writer meant it (``apply_json_strings``): a
transcript line written with ``\\u5bc6\\u7801`` for "密码", ``\\"`` for a quote or ``\\n`` for a
line break hides the words and the layout the families look for; and a transcript's message is
read after the one before it (``apply_replies``), which may have asked for the value it gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from memory_pipeline.text.secrets.families import (
    is_template,
    looks_like_password,
    looks_random,
    placeholder,
    redact_group,
    spans_around,
    sub_values,
    sub_values_in,
)

_CREDENTIAL_NAME = (
    r"[\w.-]*(?i:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|credentials?|private[_-]?key|"
    r"access[_-]?key|auth[_-]?key|signing[_-]?key|client[_-]?key)[\w.-]*"
)
# host:port:database:user:password. The host holds a letter, a dot or is "*"; the port is digits or "*".
PGPASS_RE = re.compile(
    r"(?<![\w.:/@-])(?:\*|[\w-]*[A-Za-z.][\w.-]*):(?:\d{1,5}|\*):[^\s:]{1,64}:[^\s:]{1,64}:"
    r"(?P<value>(?:\\:|[^\s:\\\"'])+)(?=[\s\"']|$)"
)
NAMED_VALUE_RE = re.compile(
    # the name: a quoted block label or the value of a name-like field
    r"(?:(?i:variable|resource|data|output|secret|parameter|param|setting|env)[ \t]+\"(?P<label>" + _CREDENTIAL_NAME + r")\""
    r"|[\"']?(?i:name|key|id|variable|param|parametername)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<named>" + _CREDENTIAL_NAME + r")\b[\"']?)"
    # then, within a few lines and before another name, the value field
    # (never past the end of the block or object: a "}")
    r"(?P<between>(?:(?!(?i:\bname|\bkey\b|\bvariable\b))[^\n}]){0,120}(?:\n(?:(?!(?i:\bname\b|\bkey\b|\bvariable\b))[^\n}]){0,120}){0,3}?)"
    r"(?<![\w-])(?i:default|value|val|secret_string|string_value|plaintext)[\"']?[ \t]*(?:=>|=|:)[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,4096})\"|'(?P<sq>[^'\n]{1,4096})'|(?P<bare>[^\s\"',;}\]]{1,4096}))"
)
_MIN_VALUE = 6
_PORT_FIELD_RE = re.compile(r":(?:\d{1,5}|\*):")
_NAME_HINT_RE = re.compile("pass|pwd|secret|token|key|credential")
_VALUE_FIELD_RE = re.compile("default|val|plaintext|string")


def _secret_value(value: str) -> bool:
    if len(value) < _MIN_VALUE or is_template(value) or "REDACTED" in value:
        return False
    return looks_like_password(value) or looks_random(value, 8)


# An HTTP cookie header: a session's cookie is its bearer credential whatever its name ("Cookie:
# sessionid=...; csrftoken=...", "Set-Cookie: id=...; Path=/"): each value of 16 or more
# characters that looks random is one (attributes and flags are shorter or plain).
_COOKIE_HEADER_RE = re.compile(r"(?i:\b(?:set-)?cookie)[ \t]*:[ \t]*(?P<pairs>[^\n\"'`]{1,4096})")
_COOKIE_PAIR_RE = re.compile(r"(?:^|;)[ \t]*[^=;\s]{1,64}=(?P<value>[^;\s]{16,4096})")


def _cookie_values(match: re.Match[str], group: str, counts) -> str | None:
    def value(pair: re.Match[str]) -> str:
        if is_template(pair.group("value")) or not looks_random(pair.group("value"), 16):
            return pair.group(0)
        return redact_group(pair, "value", "session_cookie", counts)

    pairs = match.group(group)
    new = _COOKIE_PAIR_RE.sub(value, pairs)
    return None if new == pairs else match.group(0)[: match.start(group) - match.start()] + new


def apply_config_formats(text: str, counts) -> str:
    """Redact the password of ``.pgpass`` lines, the value of named credentials and the values of
    a cookie header."""
    if "ookie" in text or "OOKIE" in text:
        text = sub_values(_COOKIE_HEADER_RE, text, lambda m, g: _cookie_values(m, g, counts), "pairs")

    def substitute(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        if not _secret_value(value.replace("\\:", ":")):
            return None
        kind = "password" if "pass" in (match.groupdict().get("label") or match.groupdict().get("named") or "pass").lower() else "secret"
        return redact_group(match, group, kind, counts)

    # Each pattern reads only the lines around its cheap hint (a ":port:" field, a credential word).
    text = sub_values_in(text, spans_around(text, _PORT_FIELD_RE, 200, 300), PGPASS_RE, substitute, "value")
    lowered = text.lower()
    if len(lowered) == len(text) and _VALUE_FIELD_RE.search(lowered):
        spans = spans_around(lowered, _NAME_HINT_RE, 200, 4700, extra_lines=3)
        text = sub_values_in(text, spans, NAMED_VALUE_RE, substitute, "dq", "sq", "bare")
    return text


# A JSON string literal holding an escape (possessive: linear on a long line without a closing quote).
_JSON_STRING = r'"(?:[^"\\\n]++|\\.)*+"'
_JSON_STRING_RE = re.compile(_JSON_STRING)
# A chat line's message text: "content": "...".
_CONTENT_RE = re.compile(rf'"content"[ \t]*:[ \t]*(?P<literal>{_JSON_STRING})')


def _decoded(literal: str) -> str:
    """The text of a JSON string literal; "" for one that does not decode."""
    try:
        value = json.loads(literal)
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def _encoded(literal: str, value: str) -> str:
    """``value`` as a JSON string literal, escaped the way ``literal`` was written."""
    return json.dumps(value, ensure_ascii="\\u" in literal)


def apply_json_strings(text: str, counts, scrub: Callable[[str], tuple[str, dict[str, int]]]) -> str:
    """Scrub the decoded value of each escaped JSON string and write it back the way it was written."""

    def substitute(match: re.Match[str]) -> str:
        literal = match.group(0)
        if "\\" not in literal or not (value := _decoded(literal)):
            return literal
        scrubbed, found = scrub(value)
        if not found:
            return literal
        counts.update(found)
        return _encoded(literal, scrubbed)

    return _JSON_STRING_RE.sub(substitute, text)


def apply_replies(text: str, counts, scrub: Callable[[str, str], tuple[str, dict[str, int]]]) -> str:
    """In a transcript's JSON lines, each message read after the one before it (``scrub(value,
    after)``): "What is the wifi password?" then "It's BlueSky2024!" on the next line. Only the
    line after a message ending in "?" or ":" is decoded; its text is written back the way it was."""
    if '"content"' not in text:
        return text
    lines = text.split("\n")
    previous = ""
    for number, line in enumerate(lines):
        match = _CONTENT_RE.search(line)
        if match is None:
            continue
        literal, asked = match.group("literal"), previous
        asks = literal.endswith(('?"', ':"', '？"', '："')) or "\\u" in literal[-8:]
        value = _decoded(literal) if asked or asks else ""  # decoded once, and only when read
        previous = value if asks else ""
        if not asked:
            continue
        scrubbed, found = scrub(value, asked)
        if found:  # every secret of the line, which the passes after this one then find no more
            counts.update(found)
            lines[number] = line[: match.start("literal")] + _encoded(literal, scrubbed) + line[match.end("literal") :]
    return "\n".join(lines)


_TABLE_CELL_NAME_RE = re.compile(
    r"(?i:[\w .-]*(?:password|passwd|passphrase|pwd|pw|secret|token|api[ _-]?key|credentials?|pin)[\w .-]*)"
)
_DELIMITERS = ("|", "\t", ",", ";")


def _cells(line: str, delimiter: str) -> list[str]:
    cells = line.split(delimiter)
    if delimiter == "|":  # the text before the first pipe and after the last is not a cell
        cells = cells[1:-1]
    return cells


def apply_tables(text: str, counts) -> str:
    """Redact the cells under a header that names a credential, down to the table's end."""
    if not any(word in text.lower() for word in ("pass", "pw", "secret", "token", "key", "credential", "pin")):
        return text
    lines = text.split("\n")
    columns: set[int] = set()
    delimiter = ""
    for n, line in enumerate(lines):
        if columns and delimiter in line:
            cells = _cells(line, delimiter)
            changed = False
            for i in columns & set(range(len(cells))):
                value = cells[i].strip().strip("`\"'")
                if value and not any(c.isspace() for c in value) and (_secret_value(value) or value.isdigit() and 4 <= len(value) <= 8):
                    cells[i] = cells[i].replace(value, placeholder("password", value), 1)
                    counts["password"] += 1
                    changed = True
            if changed:
                inner = delimiter.join(cells)
                lines[n] = f"{line[: line.index('|') + 1]}{inner}{line[line.rindex('|') :]}" if delimiter == "|" else inner
            continue
        columns, delimiter = set(), ""
        for candidate in _DELIMITERS:
            cells = _cells(line, candidate)
            # A header: short cells of at most three words each, one of them naming a credential.
            if len(cells) >= 2 and all(len(c) <= 40 and len(c.split()) <= 3 for c in cells):
                named = {i for i, cell in enumerate(cells) if _TABLE_CELL_NAME_RE.fullmatch(cell.strip())}
                if named and len(named) < len(cells):
                    columns, delimiter = named, candidate
                    break
    return "\n".join(lines)
