"""What a query asks, read without a model: its meaningful words, the people it names, whether
it asks *when*, and the period of time it names.

These feed generic signals in scoring: a transcript turn spoken by the person a question is about,
a turn that states a time for a *when* question, and a note or session dated inside the period
a question names ("in June 2023", "last week").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from memory_pipeline.recall.answers import asked_kind

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me might more most must my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where
    which while who whom whose why will with would you your yours yourself yourselves ok okay yes
    yeah hi hello hey thanks thank please sure also get got let lets like just really well oh
    s t don didn doesn isn wasn weren aren won wouldn shouldn couldn ve ll re d m""".split()
)

_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were has have had can "
    "could would should will in on at after before during".split()
)

_WHEN_RE = re.compile(
    r"^\s*(?:when\b|what (?:date|day|time|year|month|week)\b|how long ago\b|which (?:year|month|day)\b|"
    r"in which (?:year|month)\b|on what (?:date|day)\b)",
    re.IGNORECASE,
)

# A question about what the assistant said earlier: a past-tense "you ..." or a request to be
# reminded of an earlier conversation. "Can you recommend" asks for something new, not this.
_ASKS_ASSISTANT_RE = re.compile(
    r"\byou\s+(?:\w+\s+){0,2}?(?:said|suggested|recommended|mentioned|told|gave|provided|listed|wrote|"
    r"created|shared|explained|described|called|named|proposed|offered)\b|"
    # "what did you suggest": the base form after "did", where a request ("can you suggest") is not.
    r"\bdid\s+you\s+(?:\w+\s+)?(?:say|suggest|recommend|mention|tell|give|provide|list|write|create|share|"
    r"explain|describe|call|name|propose|offer)\b|\bremind me\b|"
    r"\b(?:our|the)\s+(?:previous|last|earlier|past)\s+(?:conversation|chat|discussion)\b",
    re.IGNORECASE,
)
# A request for advice opens with its frame ("Can you recommend some", "Any tips on", "Do you
# think it would be a good idea to"), words every such request shares; the topic follows.
_REQUEST_FRAME_RE = re.compile(
    r"\b(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:recommend|suggest|give|offer|share|provide|list)"
    r"(?:\s+me)?(?:\s+(?:some|a few|any|a couple of|a|an))?"
    r"|(?:do\s+you\s+have\s+)?any\s+(?:tips|suggestions|ideas|recommendations|advice)(?:\s+(?:on|for|about))?"
    r"|do\s+you\s+think\s+(?:it\s+)?(?:would|will|is)\s+(?:be\s+)?a\s+good\s+idea(?:\s+(?:for\s+me\s+)?to)?)\b",
    re.IGNORECASE,
)


def topic_of(text: str) -> str:
    """A request for advice without its frame ("Can you suggest some activities I can do during my
    commute?" -> "activities I can do during my commute?"); any other text, or a request with
    fewer than two meaningful words besides its frame, as it is."""
    stripped, frames = _REQUEST_FRAME_RE.subn(" ", text)
    stripped = " ".join(stripped.split())
    return stripped if frames and len(meaningful_words(stripped)) >= 2 else text


_FIRST_PERSON_RE = re.compile(r"\b(?:i|my|me|mine|myself|i'm|i've|i'd)\b", re.IGNORECASE)

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for m in names
}
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))

TIME_WORDS_RE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last (?:week|weekend|month|year|night|time|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|summer|winter|spring|fall)|"
    r"next (?:week|weekend|month|year)|this (?:week|weekend|month|year|morning|summer)|"
    r"(?:19|20)\d\d|(?:" + _MONTH_ALT + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|\d{1,2}(?:st|nd|rd|th)?\s+(?:"
    + _MONTH_ALT + r")\b|since|recently|the other day|weekend|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday)\b",
    re.IGNORECASE,
)
"""Words that place something in time; a *when* question is answered by a turn holding one."""

_ISO_RE = re.compile(r"\b((?:19|20)\d\d)-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR_RE = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(" + _MONTH_ALT + r")\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE
)
_MONTH_DAY_YEAR_RE = re.compile(
    r"\b(" + _MONTH_ALT + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE
)
_MONTH_YEAR_RE = re.compile(r"\b(" + _MONTH_ALT + r")\.?,?\s+(?:of\s+)?((?:19|20)\d\d)\b", re.IGNORECASE)
_MONTH_RE = re.compile(r"\b(?:in|during|since|of|last|this)\s+(" + _MONTH_ALT + r")\b", re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE_RE = re.compile(
    r"\b(yesterday|today|last week|last weekend|last month|last year|this week|this month|"
    r"this year|(\d+|a|one|two|three|four|five|six) (day|week|month|year)s? ago|"
    r"last (" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)
DAY_GRACE = 7
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


@dataclass(frozen=True)
class Period:
    """A span of days a query names; ``month`` alone (no year) matches that month of any year."""

    start: date | None = None
    end: date | None = None  # inclusive
    month: int | None = None
    # Something that happened on a day is usually told during the following days ("yesterday",
    # "last weekend"), so a note or session dated shortly after a named day still matches.
    grace_days: int = 0

    def contains(self, day: date | None) -> bool:
        if day is None:
            return False
        if self.month is not None:
            return day.month == self.month
        return self.start <= day <= self.end + timedelta(days=self.grace_days)


@dataclass(frozen=True)
class QueryInfo:
    text: str
    # What is embedded and matched: the text, or a request for advice without its frame (``topic_of``).
    topic: str
    words: tuple[str, ...]  # meaningful words, lower case
    people: tuple[str, ...]  # capitalized names, as written
    asks_when: bool
    period: Period | None
    # Whose earlier words answer it in a chat transcript: "assistant" ("what did you suggest"),
    # "user" (a question in the first person: "what book am I reading"), or None.
    asks_role: str | None = None
    # The kind of value it asks for (``answers.asked_kind``): date, number, person, place,
    # attribute, or None.
    asks_kind: str | None = None


# A possessive or a contraction's ending: "Caroline's" is Caroline, "I've" is I (no name).
_CONTRACTION_RE = re.compile(r"['’](?:s|ve|m|d|ll|re|t)\Z", re.IGNORECASE)


def meaningful_words(text: str) -> list[str]:
    """Lower-cased words that are not stopwords (the trivial-message filter counts these)."""
    out = []
    for word in _WORD_RE.findall(text):
        w = word.lower().strip("'-_")
        w = w[:-2] if w.endswith("'s") else w
        if w and w not in STOPWORDS and not (len(w) == 1 and not w.isdigit()):
            out.append(w)
    return out


def named_people(text: str) -> list[str]:
    """Capitalized words that look like names: not the first word of a question or a stopword."""
    names: list[str] = []
    for sentence in re.split(r"(?<=[.?!])\s+", text.strip()):
        for i, match in enumerate(_WORD_RE.finditer(sentence)):
            word = _CONTRACTION_RE.sub("", match.group())  # "Caroline's", "I've"
            lower = word.lower()
            if not word[:1].isupper() or lower in STOPWORDS or lower in _MONTHS:
                continue
            if i == 0 and lower in _QUESTION_WORDS:
                continue
            if word.isupper() and len(word) > 1:  # acronyms (LGBTQ, API) are topics, not people
                continue
            if word not in names:
                names.append(word)
    return names


def _month_end(year: int, month: int) -> date:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return nxt - timedelta(days=1)


def query_period(text: str, now: date) -> Period | None:
    """The period a query names, most specific form first; None when it names none."""
    try:
        if m := _ISO_RE.search(text):
            day = date(int(m[1]), int(m[2]), int(m[3]))
            return Period(day, day, grace_days=DAY_GRACE)
        if m := _DAY_MONTH_YEAR_RE.search(text):
            day = date(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
            return Period(day, day, grace_days=DAY_GRACE)
        if m := _MONTH_DAY_YEAR_RE.search(text):
            day = date(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
            return Period(day, day, grace_days=DAY_GRACE)
        if m := _MONTH_YEAR_RE.search(text):
            year, month = int(m[2]), _MONTHS[m[1].lower()]
            return Period(date(year, month, 1), _month_end(year, month))
    except ValueError:
        return None
    if m := _RELATIVE_RE.search(text):
        return _relative(m, now)
    if m := _YEAR_RE.search(text):
        year = int(m[1])
        return Period(date(year, 1, 1), date(year, 12, 31))
    if m := _MONTH_RE.search(text):
        # "may" is also a verb: only take it after a preposition (the regex asks for one).
        return Period(month=_MONTHS[m[1].lower()])
    return None


def _relative(match: re.Match, now: date) -> Period:
    phrase = match[1].lower()
    if phrase == "today":
        return Period(now, now)
    if phrase == "yesterday":
        day = now - timedelta(days=1)
        return Period(day, day)
    if phrase in ("last week", "last weekend"):
        return Period(now - timedelta(days=13), now - timedelta(days=1))
    if phrase in ("this week",):
        return Period(now - timedelta(days=7), now)
    if phrase == "last month":
        first = now.replace(day=1)
        prev_end = first - timedelta(days=1)
        return Period(prev_end.replace(day=1), prev_end)
    if phrase == "this month":
        return Period(now.replace(day=1), now)
    if phrase == "last year":
        return Period(date(now.year - 1, 1, 1), date(now.year - 1, 12, 31))
    if phrase == "this year":
        return Period(date(now.year, 1, 1), now)
    if match[4]:
        # The latest such weekday before today; it is told on that day or any day since.
        back = (now.weekday() - _WEEKDAYS.index(match[4].lower())) % 7 or 7
        day = now - timedelta(days=back)
        return Period(day, day, grace_days=back)
    count = _NUMBERS.get(match[2].lower()) if not match[2].isdigit() else int(match[2])
    unit = {"day": 1, "week": 7, "month": 30, "year": 365}[match[3].lower()]
    centre = now - timedelta(days=count * unit)
    slack = max(1, unit // 2)
    return Period(centre - timedelta(days=slack), centre + timedelta(days=slack))


_SLASHED_RE = re.compile(
    r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]{2,9}\))?(?:[ T]+(\d{1,2}):(\d{2}))?\s*$"
)


def reference_time(value: str | date | datetime) -> datetime:
    """The moment a query is asked ("now" for it), from ISO-8601 (``2023-05-30``,
    ``2023-05-30T18:40``, ``...+02:00``) or ``2023/05/30 (Tue) 18:40``; naive times are UTC.

    Raises ValueError with a one-line reason for anything else.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    try:
        if m := _SLASHED_RE.match(text):
            parsed = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0), int(m[5] or 0))
        else:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"reference time {text!r} is not a date: use ISO-8601 (2023-05-30 or 2023-05-30T18:40, "
            "UTC unless it carries an offset)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@lru_cache(maxsize=1024)
def understand(text: str, now: date, request_frame: bool = False) -> QueryInfo:
    """What a query asks; ``request_frame`` keeps a request's frame in what is matched."""
    role = asked_role(text)
    # A question about what the assistant said matches its words as they are.
    topic = text if request_frame or role == "assistant" else topic_of(text)
    return QueryInfo(
        text=text,
        topic=topic,
        words=tuple(meaningful_words(topic)),
        people=tuple(named_people(text)),
        asks_when=bool(_WHEN_RE.search(text)),
        period=query_period(text, now),
        asks_role=role,
        asks_kind=asked_kind(text),
    )


def asked_role(text: str) -> str | None:
    """Which chat role's earlier turns a question is about, when it says so."""
    if _ASKS_ASSISTANT_RE.search(text):
        return "assistant"
    if _FIRST_PERSON_RE.search(text):
        return "user"
    return None
