"""Numbers and short answers named for what they open or identify: PINs and passcodes, door,
gate and alarm codes (also named in French, Spanish, Portuguese, Italian, Dutch and German),
one-time and backup codes, lock combinations, bank account, social security and identity document
numbers, and the answer to a security question (a mother's maiden name too). Each is taken whole
where a verb, a colon or its own name hands it over ("the PIN for the garage is 4821", "my SSN is
123-45-6789"); digits alone elsewhere are dates, prices and counts.
"""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import HANDOVER_VERBS, TRAILING_PUNCTUATION, redact_group, sub_values

# A PIN is digits only, so it is taken only when a verb, a colon or a dash hands it over ("PIN is
# 4821", "PIN - 4821", "pin's 4821"), or "it's" after a comma or the question for it ("my locker
# combo, it's 12-30-8", "my PIN? It's 4471"); "#" may open it ("the code is #4417").
_HANDED_OVER = rf"[ \t]+(?i:{HANDOVER_VERBS})[ \t]+|['’]s[ \t]+|[ \t]*[:：=][ \t]*|[ \t]+[–—-][ \t]+|[ \t]*[,?][ \t]*(?i:it['’]s|it is)[ \t]+"
_DIGITS = r"\d{4,8}|\d(?: \d){3,7}|\d(?:-\d){3,7}"  # "4821", "7 7 3 1", "7-7-3-1"
_DIGITS_VALUE = rf"#?(?P<value>{_DIGITS})(?![\d.,:/-]?\d)"
# ... and a dial's numbers, for a code a lock opens with ("the locker code is 5-19-33")
_CODE_VALUE = rf"#?(?P<value>{_DIGITS}|\d{{1,2}}(?:-\d{{1,2}}){{2,3}})(?![\d.,:/-]?\d)"
# A lock's numbers on its dial or wheels, three to five: "12-34-56", "7 21 3", "12 / 34 / 56".
_DIAL = r"\d{1,3}(?:[ \t]*[-/ ][ \t]*\d{1,3}){2,4}"
# Where a number ends its clause: punctuation, a JSON string's end or the line's.
_CLAUSE_END = r"[ \t]*(?:[.!?,;)\"\\]|$)"
# What a PIN or a code opens may stand between it and the verb: "the PIN for the garage is 4821",
# "the code to my front door is 2468" (at most four words, no digit, within the sentence).
_WORD = r"[ \t]+[^\s\d.!?:=;,]{1,20}"  # a word with no digit, within the sentence
_OPENS = rf"(?:[ \t]+(?i:for|to|of|on|at|für|zur|zum|de|del|du|da|di|pour|para|per|voor|van)(?:{_WORD}){{1,4}}?)?"
PIN_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:pin(?:[ -]?(?:code|number|nummer))?|pass ?code|geheimzahl|PIN码|暗証番号)"
    # "PIN" in capitals names what follows without a verb too: "badge PIN 9087", and so does a
    # passcode ("Meeting ID 845 2231 9981 Passcode 774411"); or in brackets or commas after it ("my
    # PIN (6612)", "your new PIN, 5566, has been saved")
    rf"(?:{_OPENS}{_HANDED_OVER}|[ \t]*\((?=\d{{4,8}}\))|[ \t]*,[ \t]*(?=\d{{4,8}}[ \t]*,)|[ \t]*\?[ \t]+(?=[\d#])|[ \t]*(?:是|は|는|은)|(?:(?<=PIN)|(?<=[Pp]asscode)|(?<=PASSCODE))[ \t]+){_DIGITS_VALUE}"
)
# ... or in lower case right after whose it is or the card it opens: "my atm pin 3390", "debit card pin 8812".
OWNED_PIN_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:my|our|your|his|her|their|atm|card|debit|credit|bank|phone|sim)[ \t]+(?i:pin)[ \t]+{_DIGITS_VALUE}"
)
# ... or a colon later in its sentence, after words with no digit, when the number ends the clause
# ("my PIN so I'll write it here: 9021"; not "PIN pads sold this year: 4500 units").
# ... or a comma after what it is ("Mom's bank PIN is her birthday, 0712").
PIN_LATER_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:pin|pass ?code)(?:(?:{_WORD}){{1,8}}?[ \t]*[:：]|{_OPENS}[ \t]+(?i:is|was)(?:{_WORD}){{1,4}}?[ \t]*,)"
    rf"[ \t]*{_DIGITS_VALUE}(?={_CLAUSE_END})",
    re.M,
)
# A door, gate, alarm, locker or wifi code is a PIN by another name, handed over the same way: "the gate
# code is 4821", "the code for the garage door is 4821", "locker code: 0923", "the door code changed,
# it's now 4-4-9-1"; so is a one-time code while it is valid.
_OPENED = r"(?:door|gate|alarm|wi-?fi|disarm|lock|unlock|entry|access|keypad|garage|opener|safe|building|lockbox|locker|mailbox|padlock)"
# ... and in other languages, named after the code: "le code de la porte est 4821", "el código
# de la puerta principal es 4821", "der Code für die Haustür ist 4821", "der Türcode lautet 4821".
_OPENED_ABROAD = (
    r"(?:porte|portail|garage|alarme|immeuble|puerta|port[oó]n|portal|alarma|garaje|edificio|port[aã]o|porta|"
    r"pr[eé]dio|cancello|portone|allarme|deur|poort|hek|alarm|t[uü]r|haust[uü]r|tor|garagentor|alarmanlage)"
)
_CODE_WORD = r"(?:code|c[oó]digo|codice|digicode|clave)"
_OF_ABROAD = r"(?:(?:de la|de|du|des|del|do|da|della|dello|van de|van het|voor de|f[uü]r (?:die|den|das)|der|zur|zum)[ \t]+|de l['’]|dell['’])"
ACCESS_CODE_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:{_OPENED}(?:[ -]|,[ \t]+)?code(?:{_OPENS}(?:{_HANDED_OVER})|[ \t]+)"  # ("the lockbox, code 0712")
    # up to two words between, handed over: "the alarm panel master code is 9921#"
    rf"|{_OPENED}(?:[ \t]+[^\s\d.!?:=;,]{{1,20}}){{1,2}}[ \t]+code{_OPENS}(?:{_HANDED_OVER})"
    # in brackets after its name ("the alarm code (5512)"; not "the building code (2021)", a regulation's year),
    # or a few words on, handed over by "is" or "was" at the clause's end ("the gate code you gave me was 7788")
    rf"|(?!building){_OPENED}[ -]?code(?:[ \t]*\((?=\d{{4,8}}\))|(?:{_WORD}){{1,4}}?[ \t]+(?:is|was)[ \t]+(?=\d+{_CLAUSE_END}))"
    rf"|code[ \t]+(?:for|to)(?:{_WORD}){{0,3}}?[ \t]+{_OPENED}s?(?:{_HANDED_OVER})"
    rf"|{_CODE_WORD}[ \t]+{_OF_ABROAD}(?:[^\s\d.!?:=;,]{{1,20}}[ \t]+){{0,2}}?{_OPENED_ABROAD}(?:{_WORD}){{0,2}}?(?:{_HANDED_OVER})"
    rf"|(?:t[uü]r|tor|alarm|garagen|zugangs|haust[uü]r)code(?:{_HANDED_OVER})"
    # the lock itself handed the number ("the Airbnb lockbox is 4417", "the garage keypad is 1357")
    rf"|(?:lockbox|keypad|key ?safe|padlock)[ \t]+(?:is|was)[ \t]+){_CODE_VALUE}",
    re.M,
)  # "the gate code is 4821", "door code 4821#" (the code's own name needs no verb)
ONE_TIME_CODE_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:otp|one[ -]time (?:code|password|passcode)|(?:verification|confirmation|login|sign-in|"
    r"2fa|mfa|two-factor|authentication|security) code)"
    # (a few words between: "the login code they texted me is 558102")
    rf"(?:{_WORD}){{0,4}}?(?:{_HANDED_OVER}){_DIGITS_VALUE}"
)
# A lock's combination, named with what it opens or not: "the combination to the safe is 12-34-56",
# "padlock combo: 7 21 3", "the combination is 12-34-56", "the combo for the bike is 1 2 3 4" (three to
# five numbers handed over; "the combination of flavors was 3-4-5 stars" names no lock).
_LOCK = r"(?:lock|safe|padlock|locker|vault)"
COMBINATION_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:(?:{_LOCK}[ -])?(?:combination|combo)(?:"
    rf"[ \t]+(?:for|to|of|on)(?:{_WORD}){{0,3}}?[ \t]+(?P<lock>{_LOCK})s?|[ \t]+(?:for|to|on)(?:{_WORD}){{1,3}}?)?)"
    # (or a space alone before numbers dashed, as a dial's are: "locker 114, combination 8-22-31")
    rf"(?:{_HANDED_OVER}|[ \t]+(?=\d{{1,2}}-\d{{2}}-\d))(?P<value>{_DIAL}"
    # (one number of a wheel lock's digits when the lock is named: "the combination on my bike lock is 0419")
    r"|(?(lock)\d{3,8}|(?!)))(?![\d.,:/-]?\d)"
)
# ... or the numbers a named lock opens with: "the safe in the closet opens with 28-11-47", "our
# house alarm disarms with 4-7-2-9" (not "unlock it with 4471": nothing names a lock).
OPENS_WITH_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:{_OPENED}|vault)(?:{_WORD}){{0,4}}?[ \t]+(?i:opens|unlocks|disarms|arms|is (?:opened|unlocked|disarmed))"
    rf"[ \t]+(?i:with)[ \t]+(?P<value>\d{{3,8}}|{_DIAL})(?![\d.,:/-]?\d)"
    rf"(?={_CLAUSE_END}|[ \t]+(?i:and|but|if|so|when)\b)",  # the clause ends: no "1500 people"
    re.M,
)
# ... and the new one when a change names it later in the sentence: "my old locker code was 1122 but
# they changed it to 3344" (not any code: "the code review changed it to 2024 style").
CODE_CHANGED_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:(?P<pin>pin|pass ?code)|{_OPENED}[ -]?code)(?![\w])[^.!?\n]{{0,80}}?(?<!\w)"
    rf"(?i:changed|set|reset|updated|switched)[ \t]+(?i:it|that|this|mine)[ \t]+to[ \t]+{_DIGITS_VALUE}"
)
# Backup or recovery codes, each holding a digit, one or a list: "my 2FA backup codes are
# 8421-3390, 1177-2045".
_CODE = r"(?=[A-Za-z]*\d)[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{3,12})?"
RECOVERY_CODES_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:(?:backup|recovery|2fa|mfa|two-factor)[ -]codes?)"
    # a separator between two codes, never none: two codes glued could be cut apart countless ways
    rf"(?:[ \t]+(?i:are|were)[ \t]+(?:[:\-][ \t]*)?|{_HANDED_OVER}|[ \t]+)(?P<value>{_CODE}(?:(?:[ \t]*[,;][ \t]*|[ \t]+)(?:and[ \t]+)?{_CODE})*+)(?![\w-])"
)
# A bank account's number, named as one: "my account number is 000123456789" (an IBAN has its own
# rule, by its country's layout).
BANK_ACCOUNT_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:(?:bank |checking |savings |current )?(?:account|acct)[ -]?(?:number|no\.?|nr\.?|#)"
    r"|(?:bank|checking|savings|current) account(?=[ \t]+(?:is|was)[ \t]+\d)"  # "my bank account is 123456789"
    # "account" alone after a routing number or a sort code in its sentence: "routing number 021000021
    # and account 123456789012", "sort code 20-45-67, account 41322198"
    r"|(?:routing|sort code)[^.!?\n]{1,60}?(?<![A-Za-z0-9_])account"
    r"|kontonummer|número de cuenta|numéro de compte|numero di conto|rekeningnummer|número da conta)"
    r"(?:[ \t]+(?i:is|was|:)[ \t]*|[ \t]*[:#=][ \t]*|[ \t]+)"
    r"(?P<value>\d(?:[ -]?\d){5,16})(?![\d-])"
)
# A value handed over by "is", "was" or a colon alone.
_IS_OR_COLON = r"(?:[ \t]+(?i:is|was)[ \t]+|[ \t]*:[ \t]*)"
# How a number named for what it is ("SSN", "passport number") is handed over: a verb, a colon,
# "#" or "=", or a bare space.
_NAMED_HANDOVER = rf"(?:[ \t]+(?i:{HANDOVER_VERBS})[ \t]+|[ \t]*[:#=][ \t]*|[ \t]+)"
# A US social security number, named as one: "my SSN is 123-45-6789", "social security number: 123 45 6789".
SSN_RE = re.compile(
    # "social" alone ("my social is 078-05-1120", "... is 078051120") only before the number in its shape
    r"(?<![A-Za-z0-9_])(?i:ssn|social security(?: number| no\.?)?"
    rf"|social(?={_IS_OR_COLON}\d{{3}}(?P<gap>[ -]?)\d{{2}}(?P=gap)\d{{4}}(?![\d-])))"
    rf"{_NAMED_HANDOVER}"
    r"(?P<value>\d{3}(?P<sep>[ -]?)\d{2}(?P=sep)\d{4})(?![\d-])"
)
# ... or later in its sentence, in its dashed shape: "my SSN, in case you need it for the form: 512-44-9087".
SSN_LATER_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:ssn|social security)[^.!?\n]{1,80}?(?<![\d-])(?P<value>\d{3}-\d{2}-\d{4})(?![\d-])"
)
# An identity document's number, named as one: "my passport number is X1234567", "driver's license
# no. D1234567", "D1234-5678-9012". Capitals and digits with at least one digit, so "passport is
# expired" stays.
_DOCUMENT_NUMBER = r"(?=[A-Z0-9-]*\d)(?:[A-Z0-9]{1,9}(?:-[A-Z0-9]{2,9}){1,3}|[A-Z0-9]{6,18})(?![\w-])"
ID_DOCUMENT_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:(?P<passport>passport)|(?P<licence>driv(?:er'?s|ing)[ -]licen[cs]e))"
    r"(?i:[ -](?:number|no\.?|nr\.?|#))?"
    + _NAMED_HANDOVER
    + rf"(?P<value>{_DOCUMENT_NUMBER})"
)
# A national health, insurance or tax number, named as one: "my NHS number is 943 476 5919", "tax
# ID (SIN) is 046 454 286", "National Insurance number: QQ 12 34 56 C", "my SIN is 046 454 286"
# (Canada's social insurance number, in capitals: "sin" is a word), "my tax file number is 123 456 782",
# "health card number 9876-543-210-AB".
NATIONAL_ID_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?i:nhs|national insurance|social insurance|medicare|medicaid|health insurance|"
    r"tax(?:payer)? id(?:entification)?|tax file|health card|steuer-?id(?:entifikationsnummer)?|aadhaar|personnummer)"
    r"(?i:[ -](?:number|no\.?|nr\.?|#|card))?|SIN(?![a-z]))(?:[ \t]*\([^)\n]{1,20}\))?"
    + _NAMED_HANDOVER
    + r"(?P<value>[A-Z0-9]{1,12}(?:[ -][A-Z0-9]{1,12}){0,4})(?![\w-])"
)
# The answer to a security question, which recovers an account as a password does: "the answer to
# my security question is Fluffy", "security answer: 'blue whale'", "my secret answer for the bank
# is Springfield", and the question every bank asks, "my mother's maiden name is Okafor"; a bank's
# security or memorable word is one too ("my memorable word is "pineapple"").
SECURITY_ANSWER_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?i:security (?:question )?answer|secret answer|(?:security|memorable) word|answer to (?:my|the|your|his|her|our) "
    rf"(?:security|secret) question|(?:mother|mom|mum)['’]?s maiden name){_OPENS}{_IS_OR_COLON}"
    r"(?!\[REDACTED)(?:(?i:it['’]s|it is)[ \t]+)?(?:(?P<q>[\"'`“‘])(?!\[REDACTED)(?P<quoted>[^\"'`”’\n]{1,100})[\"'`”’]|(?P<value>(?!(?i:the|a|an|my|in|on|stored|saved)\b)"
    # a name with its title whole ("Mr. Whiskers", "Dr Okafor")
    r"(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Lady|Aunt|Uncle|St)\.?[ \t]+(?=[A-Z]))?(?:[^\s\"'`]|(?<=\w)['’](?=\w)){2,64}))"
)


def _national_id(match: re.Match[str], group: str, counts) -> str | None:
    """Six letters and digits or more, four of them digits ("QQ 12 34 56 C", "1EG4-TE5-MK73");
    "12 pages" or "2024" is no such number."""
    value = match.group(group)
    if sum(c.isdigit() for c in value) < 4 or sum(c.isalnum() for c in value) < 6:
        return None
    return redact_group(match, group, "national_id", counts)


def apply_named_numbers(text: str, counts) -> str:
    """Every rule above whose words ``text`` holds (a window around a credential word)."""
    low = text.lower()
    for pattern, kind, words in (
        (PIN_RE, "pin", ("pin", "passcode", "pass code", "geheimzahl", "暗証")),
        (PIN_LATER_RE, "pin", ("pin", "passcode", "pass code")),
        (OWNED_PIN_RE, "pin", ("pin",)),
        (ACCESS_CODE_RE, "access_code", ("code", "códig", "codic", "clave", "lockbox", "keypad", "safe", "padlock")),
        (ONE_TIME_CODE_RE, "one_time_code", ("otp", "code", "one")),
        (COMBINATION_RE, "combination", ("combin", "combo")),
        (OPENS_WITH_RE, "access_code", (" with ",)),
        (RECOVERY_CODES_RE, "recovery_code", ("code",)),
        (SSN_RE, "ssn", ("ssn", "social")),
        (SSN_LATER_RE, "ssn", ("ssn", "social security")),
        (BANK_ACCOUNT_RE, "bank_account", ("account", "acct", "konto", "cuenta", "compte", "conto", "rekening")),
    ):
        if any(word in low for word in words):
            text = sub_values(pattern, text, lambda m, g, kind=kind: redact_group(m, g, kind, counts), "value")
    if " to " in low:
        text = sub_values(CODE_CHANGED_RE, text, lambda m, g: redact_group(
            m, g, "pin" if m.group("pin") else "access_code", counts), "value")
    if "answer" in low or "maiden" in low or "word" in low:
        text = sub_values(SECURITY_ANSWER_RE, text, lambda m, g: redact_group(
            m, g, "security_answer", counts, len(m.group(g).rstrip(TRAILING_PUNCTUATION))), "quoted", "value")
    national = ("nhs", "insurance", "medica", "tax", "health card", "steuer", "aadhaar", "personnummer")
    if any(word in low for word in national) or "SIN" in text:
        text = sub_values(NATIONAL_ID_RE, text, lambda m, g: _national_id(m, g, counts), "value")
    if "passport" in low or "licen" in low:
        text = sub_values(ID_DOCUMENT_RE, text, lambda m, g: redact_group(
            m, g, "passport" if m.group("passport") else "driving_licence", counts), "value")
    return text
