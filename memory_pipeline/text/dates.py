"""When a memory happens: date phrases found in a sentence, resolved against the time it was said.

Phrases are found by a narrow pattern (weekdays, month-day, ISO dates, "next week", "tomorrow",
"end of November", ...) and each is parsed by dateparser with the message's time as
``RELATIVE_BASE``, in the speaker's timezone, preferring the future: "next Tuesday" said on
Friday 30 October is Tuesday 3 November. A phrase without a time of day resolves to local
midnight, so a date-only plan falls in the right local day whatever the server's timezone.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_WEEKDAY = r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_TIME = r"(?:,?\s*(?:at\s+)?\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)|,?\s*(?:at\s+)?\d{1,2}:\d{2})"
_PHRASES = [
    rf"(?:(?:on|by)\s+)?(?:{_WEEKDAY},?\s+)?\d{{4}}-\d{{2}}-\d{{2}}(?:[ T]\d{{2}}:\d{{2}}|{_TIME})?",
    rf"(?:(?:on|by)\s+)?(?:{_WEEKDAY},?\s+)?(?:{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH})(?:,?\s+\d{{4}})?{_TIME}?",
    rf"(?:next|this|coming)\s+(?:{_WEEKDAY}|week(?:end)?|month|year){_TIME}?",
    rf"(?:on\s+|by\s+)?{_WEEKDAY}{_TIME}?",
    r"tomorrow|yesterday|today|tonight|this (?:morning|afternoon|evening)",
    r"in\s+(?:\d+|a|one|two|three|four|five|six|seven|ten)\s+(?:days?|weeks?|months?)",
    r"(?:\d+|a|one|two|three)\s+(?:days?|weeks?)\s+ago",
]
_PHRASE_RE = re.compile(r"\b(?:" + "|".join(_PHRASES) + r")\b", re.I)
_END_OF_RE = re.compile(rf"\b(?:the\s+)?end\s+of\s+({_MONTH})\b", re.I)
_FROM_TO_RE = re.compile(r"\bfrom\b.+?\b(?P<to>to)\b", re.I)
_YEAR_RE = re.compile(r"\b\d{4}\b")
_HAS_TIME_RE = re.compile(r"\d:\d|a\.?m\b|p\.?m\b|tonight|morning|afternoon|evening", re.I)
_TZ_LINE_RE = re.compile(r"\b(?i:time\s*zone)\b[^A-Za-z]*([A-Z][A-Za-z_]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)")


def zone(name: str | None) -> ZoneInfo:
    """A timezone by IANA name; UTC when unknown."""
    try:
        return ZoneInfo(name) if name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def detect_timezone(texts: list[str]) -> str | None:
    """The IANA timezone a memory file names ("Timezone Europe/Lisbon"), if any."""
    for text in texts:
        match = _TZ_LINE_RE.search(text)
        if match:
            try:
                ZoneInfo(match.group(1))
                return match.group(1)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return None


def tenant_timezone(memory_files: list[Path]) -> str | None:
    texts = []
    for path in memory_files:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace")[:20000])
        except OSError:
            continue
    return detect_timezone(texts)


_RELATIVE_RE = re.compile(rf"^(?:(?:on|by)\s+)?(?:{_WEEKDAY}{_TIME}?|(?:next|this|coming)\b.*|tomorrow|yesterday|today|tonight|this .*|in\s.*|.*\bago)$", re.I)


def find_when(text: str, said_at: datetime, tz: ZoneInfo, relative: bool = True, past: bool = False) -> datetime | None:
    """The first date phrase of ``text`` resolved against ``said_at``, as UTC; None if none.

    ``relative=False`` (an undated note, whose "today" is not known) keeps only phrases that name
    a calendar date. ``past``: the sentence dates a past deed (``salience.dated_in_past``), so a
    date without a year is the last one before it was said ("we renewed on 1 March"), not the next.
    """
    import dateparser  # here, not with the module: a recall process never parses dates with it

    base = said_at.astimezone(tz).replace(tzinfo=None)
    end_of = _END_OF_RE.search(text)
    found = []
    for match in _PHRASE_RE.finditer(text):
        if end_of and end_of.start() <= match.start() < end_of.end():
            continue
        if not relative and _RELATIVE_RE.match(match.group(0).strip()):
            continue
        resolved = resolve_phrase(match.group(0), base, tz, past)
        if resolved is not None:
            found.append((match.start(), resolved))
    if found:
        # "moved from 21 November to 28 November": the new date is the one that holds.
        changed = None
        for changed in _FROM_TO_RE.finditer(text):
            pass
        if changed and len(found) > 1:
            after = [r for start, r in found if start >= changed.start("to")]
            if after:
                return after[0]
        return found[0][1]
    if end_of:
        month = dateparser.parse(end_of.group(1), languages=["en"], settings={"RELATIVE_BASE": base})
        if month is not None:
            year = base.year
            if (month.month, calendar.monthrange(year, month.month)[1]) < (base.month, base.day):
                year += 1  # "the end of March" said in November: next March
            last = calendar.monthrange(year, month.month)[1]
            return datetime(year, month.month, last, tzinfo=tz).astimezone(UTC)
    return None


_MOVE_RE = re.compile(r"\bfrom\s+(?P<old>[^.;]{3,60}?)\s+to\s+(?P<new>[^.;]{3,60}?)(?=[.;,)]|\s+(?:and|but)\b|$)", re.I)


def rescheduled(text: str, said_at: datetime, tz: ZoneInfo) -> tuple[datetime, datetime] | None:
    """(old, new) when ``text`` moves something "from <date> to <date>", else None."""
    base = said_at.astimezone(tz).replace(tzinfo=None)
    for match in _MOVE_RE.finditer(text):
        ends = []
        for part in (match.group("old"), match.group("new")):
            phrase = _PHRASE_RE.search(part)
            ends.append(resolve_phrase(phrase.group(0), base, tz) if phrase else None)
        if all(ends):
            return ends[0], ends[1]
    return None


def resolve_phrase(phrase: str, base: datetime, tz: ZoneInfo, past: bool = False) -> datetime | None:
    """One date phrase against a naive local ``base``; UTC, local midnight when no time is said;
    ``past``: the phrase dates something that already happened."""
    import dateparser

    cleaned = re.sub(r"^(?:on|by)\s+", "", phrase.strip(), flags=re.I)
    cleaned = re.sub(r"^(?:coming)\s+", "next ", cleaned, flags=re.I)
    settings = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past" if past or re.search(r"\bago\b|yesterday", cleaned, re.I) else "future",
        "RETURN_AS_TIMEZONE_AWARE": False,
        "PREFER_DAY_OF_MONTH": "first",
    }
    try:
        parsed = dateparser.parse(cleaned, languages=["en"], settings=settings)
    except (ValueError, OverflowError, TypeError):
        return None
    if parsed is None:
        return None
    if parsed - base > timedelta(days=300) and not _YEAR_RE.search(cleaned):
        # "moved the weekend of 7-8 November", written on 11 November: last year's date, not next.
        parsed = dateparser.parse(cleaned, languages=["en"], settings={**settings, "PREFER_DATES_FROM": "past"}) or parsed
    if not _HAS_TIME_RE.search(cleaned):
        parsed = parsed.replace(hour=0, minute=0, second=0, microsecond=0)
    return parsed.replace(tzinfo=tz).astimezone(UTC)


def local_day_bounds(day: datetime, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """UTC start and end (exclusive) of the local calendar day holding ``day``."""
    local = day.astimezone(tz)
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=1)).replace(tzinfo=None).replace(tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)
