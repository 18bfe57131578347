"""Credentials written in prose, in any of many languages and scripts.

Three passes, each starting at a credential word (``password``, ``Passwort``, ``mot de passe``,
``密码``, ``パスワード``, ``пароль``, ``api key``, ``токен`` ...; an inflected ending and a German
compound count, and a word glued to its neighbours in a script written without spaces):

- the word, a few words, a verb or a colon, then the value: "the password for the staging box
  was changed to X", "Mein Passwort ist X", "密码是X";
- the word right before a value that mixes letters and digits: "user admin and password X";
- the word and, later in the same clause, a value that only a chosen or generated secret looks
  like (``chosen_secret``): "mein Passwort für den Staging-Server lautet X".

Beside them: a password given with its user ("creds are admin:X", "jane@example.com / X"), as a
change ("changed from X to Y", "set the admin pass to X"), as a plain word the spaCy model's word
index knows only as a noun ("my password is sunshine", ``secrets.lexicon``); and the numbers of
``secrets.numbers`` (PINs, door codes, lock combinations, account numbers ...), read in the same
windows. They read only windows of text around the credential words, found by a plain substring
search on the lower-cased text, so prose without such a word costs one pass of that search.

One pass reads elsewhere: a password named after its value ("I use 'X' as my password",
``secrets.named_after``) reads the text before the credential word.
"""

from __future__ import annotations

import re

from memory_pipeline.text.secrets.families import (
    HANDOVER_ADVERBS,
    HANDOVER_VERBS,
    PLACEHOLDER_RE,
    TRAILING_PUNCTUATION,
    entropy,
    is_template,
    looks_like_password,
    looks_random,
    placeholder,
    redact_group,
    rewrite_spans,
    spans_around,
    sub_values,
    sub_values_in,
)
from memory_pipeline.text.secrets.lexicon import plain_noun, plain_word, quoted_words, run_together
from memory_pipeline.text.secrets.numbers import apply_named_numbers

# --- Prose ---------------------------------------------------------------------------------------
# "my password is X", "the passphrase for the vault was 'X'", "mot de passe : X", "密码是X".
# Credential words in many languages and scripts, each with a short inflection ("Passworts",
# "şifresi", "hasła"); a long Latin one may also end a compound ("Datenbankpasswort").
PASSWORD_WORDS = (
    r"passwords?|passphrase|passcode|passwd|pwd|pw|pass ?word|pin code|access code|passwort|kennwort|"
    r"mot de passe|contraseña|contrasena|contrasenya|clave|senha|wachtwoord|lösenord|losenord|passord|"
    r"adgangskode|kodeord|salasana|hasło|haslo|heslo|jelszó|jelszo|parola|parolă|şifre|sifre|lozinka|"
    r"geslo|κωδικός|συνθηματικό|пароль|парола|лозинка|密码|密碼|口令|パスワード|暗証番号|비밀번호|암호|"
    r"كلمة المرور|كلمة السر|סיסמה|סיסמא|رمز عبور|पासवर्ड|รหัสผ่าน|mật khẩu|kata sandi|katalaluan"
)
# also a configuration directive that ends in "pass" (requirepass, storepass, become_pass)
_COMPOUND_WORDS = r"passwort|kennwort|password|wachtwoord|lösenord|passord|salasana|heslo|jelszó|pass|pwd"
_TOKEN_WORDS = (
    r"api[ _-]?key|secret(?: key)?|(?:private|signing|encryption|master|wallet) key|access (?:key|token)|token|"
    r"auth token|client secret|key|"
    r"clé(?: API)?|clave de API|chiave(?: API)?|API-Schlüssel|Zugangsschlüssel|ключ(?: API)?|токен|"
    r"密钥|秘钥|令牌|トークン|APIキー|秘密鍵|토큰|API 키"
)
_LETTER = r"[A-Za-zÀ-ɏͰ-ϿЀ-ӿ]"  # Latin, Greek and Cyrillic: scripts that inflect a word by its ending
_KEYWORD = (
    rf"(?:(?<![A-Za-z0-9_:\-])(?i:(?P<kw>{PASSWORD_WORDS}|{_TOKEN_WORDS}))"
    # a compound, glued in lower case or hyphened ("Datenbankpasswort", "WLAN-Passwort"; not the
    # capital of a name run together, "LastPass")
    rf"|(?:(?<=[a-zäöüß])(?=[a-zäöü])|(?<=[A-Za-zÄÖÜäöüß]-))(?i:(?P<compound>{_COMPOUND_WORDS}))){_LETTER}{{0,3}}(?!{_LETTER})"
)
# Printable ASCII but quotes, backtick, space, < and >, and the backslash (JSON writes a line
# break inside a string as "\n": the value ends there).
_ASCII_VALUE = r"[!#-&(-;=?-\[\]-_a-~]"
# Up to a few words between the credential word and its verb ("for the staging database"),
# never across a sentence.
_FEW_WORDS = r"(?:[ \t]+[^\s.!?\"'`:=]{1,20}){0,4}?"
PROSE_RE = re.compile(
    _KEYWORD
    + rf"(?P<mid>{_FEW_WORDS})"
    # handed over by a verb ("is", "'s", "was changed to"), a colon or a dash
    rf"(?:[ \t]+(?i:{HANDOVER_VERBS})(?=[\s:\-\"'`“‘«])|['’]s(?=[ \t])|[ \t]+[–—-](?=[ \t])|[ \t]*[:：](?=[ \t]|[^\x00-\x7f])"
    r"|[ \t]*(?:是|为|為|は|는|은|이|가|：))[ \t]*[:\-]?[ \t]*"
    r"(?:(?P<q>[\"'`“‘«「])(?P<quoted>[^\"'`”’»」\n]{1,200})[\"'`”’»」]|(?P<bare>"
    + _ASCII_VALUE
    + r"{4,4096}))"
)
PASSWORD_KEYWORD_RE = re.compile(rf"(?:{PASSWORD_WORDS}|{_COMPOUND_WORDS})[^\W\d_]{{0,3}}", re.IGNORECASE)
# "... user admin and password Adm1n2024": no verb, so the value must mix letters and digits.
BARE_PASSWORD_RE = re.compile(
    r"(?<![\w:\-])(?i:password|passwort|passcode|passwd|pwd|(?P<short>pass))(?:[ \t]+(?i:is|was))?[ \t]+(?P<value>[^\s\"'`]{8,200})"
)  # ("the pass is Gr33nDay!": "pass" takes a value only a chosen password looks like)
# A changed password names the old one and the new: "my password was changed from Tulip55 to Daisy66".
CHANGED_FROM_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:{PASSWORD_WORDS}){_FEW_WORDS}[ \t]+(?i:(?:was|has been|got|is)[ \t]+)?"
    r"(?i:changed|reset|updated|switched)[ \t]+from[ \t]+(?P<old>[^\s\"'`]{4,200})[ \t]+to[ \t]+(?P<new>[^\s\"'`]{4,200})"
)
# A user and a password given together in prose: "creds are admin:Sup3rS3cret!", "login: bob /
# hunter2", "login for the portal: jdoe, Spring#2025", "jane@example.com / Rainbow#2024" (on a
# command line: ``secrets.families.USER_PASSWORD_RE``).
LOGIN_PAIR_RE = re.compile(
    r"(?:(?<![A-Za-z0-9_])(?i:creds|credentials|logins?|log-in|wi-?fi|wlan)(?:[ \t]+(?i:for|to|on|at)(?:[ \t]+[^\s:,]{1,30}){1,3}?)?"
    r"(?:(?P<handed>[ \t]+(?i:is|are|was|were|use)[ \t]*|[ \t]*[:=][ \t]*)|[ \t]+)"
    r"(?!\[REDACTED)(?P<user>[^\s:/@\"'`,]{2,64})|(?<![/\w.+-])(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}))"
    # a comma after "login:" or "login is" only; a dash after an address ("Hulu - mark@me.com - X")
    r"(?:[ \t]*/[ \t]*|:(?=\S)|(?(handed),[ \t]*|(?!))|(?(email)[ \t]+(?P<dash>[-–—])[ \t]+|(?!)))(?P<value>[^\s\"'`]{4,200})"
)
# App passwords: four groups of four lower-case letters, spaced by Google ("abcd efgh ijkl mnop"),
# dashed by Apple ("abcd-efgh-ijkl-mnop").
APP_PASSWORD_RE = re.compile(
    r"(?i:app(?:lication)?(?:[ -]specific)?[ -]password)(?:[ \t]+(?i:is|was)[ \t]*|[ \t]*:[ \t]*|[ \t]+)"
    r"(?P<value>[a-z]{4}(?P<gap>[ -])[a-z]{4}(?P=gap)[a-z]{4}(?P=gap)[a-z]{4})(?![A-Za-z-])"
)
# Any credential word and, later in the same clause (a few words on, or glued in a script written
# without spaces), a value that only a chosen or generated secret looks like.
KEYWORD_RE = re.compile(_KEYWORD)
_HEX_SECRET_RE = re.compile(r"(?:0x)?[0-9a-fA-F]{32,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")  # or a UUID
NEAR_REACH = 80  # characters after the keyword
NEAR_WORDS = 8  # words after the keyword
NEXT_SENTENCE_WORDS = 4  # words of the next sentence, when the keyword ends its own
_ASIDE_RE = re.compile(r"[ \t]*,[^,.!?;:\n]{3,100},(?=[ \t]+(?i:is|was)[ \t])")
_CLAUSE_END_RE = re.compile(r"[.!?;](?:\s|$)|\n|[。！？；]")
_ASCII_RUN_RE = re.compile(_ASCII_VALUE + "+")
_NOT_A_VALUE_RE = re.compile(
    r"^(?:v?\d+(?:\.\d+)+\S*|\d[\d:./-]*[a-z]{0,3}|[\w.+-]+@[\w.-]+|[a-z][a-z0-9+.-]*://\S*|\S+\.(?i:[a-z]{2,5})(?:#[\w-]*)?\]?|"
    r"(?:[\w.-]+/){2,}[\w.#-]+\]?|"
    r"#\w+|@\w+|(?P<word_number>[A-Za-z]+[_-]?\d{1,4})|\d{1,4}[A-Za-z]{1,3}|\d{1,4}[A-Z]?[a-z]{2,})$"
)  # a version, a date or time, an address, a file name or path (a citation's "memory/notes.md#L3"),
# a tag, a word and a number ("1Password")

# A literal piece of every credential word above, searched in the lower-cased text (and of what a
# lock opens with, "opens with", "unlocked with", "disarms with": a literal each, as a group of
# alternatives slowed the search by half).
_HINT_RE = re.compile(
    "pass|pw|pin|geheimzahl|kennw|mot de|contra|clave|senha|wacht|lösen|losen|adgang|kodeord|salasana|hasł|hasl|"
    "heslo|jelsz|parol|şifre|sifre|lozinka|geslo|κωδικ|συνθημ|парол|лозин|密|口令|パスワード|暗証|비밀번호|"
    "암호|كلمة|סיסמ|رمز|पासवर्ड|รหัส|mật khẩu|kata sandi|katalaluan|key|secret|token|clé|chiave|"
    "schlüssel|ключ|токен|鍵|钥|令牌|トークン|キー|토큰|키|code|códig|codic|ssn|social|driv(?:er'?s|ing)[ -]licen|"
    "otp|combination|combo|answer|maiden|memorable|security word|nhs|national insurance|social insurance|health insurance|medica|tax id|taxpayer|steuer|aadhaar|personnummer|account ?(?:n|#|is |was )|acct|routing|sort code|tax file|health card|lockbox|keypad|key ?safe|padlock|pens with|pened with|locks with|locked with|arms with|armed with|creds|credential|login|log-in|wi-?fi|wlan|@|konto|cuenta|compte|conto|rekening"
)
_HINT_OR_SIN_RE = re.compile(f"(?i:{_HINT_RE.pattern})|SIN(?![a-z])")
# The characters the keyword's lookbehind reads, "mot de " before "passe", the word before
# "code" ("authentication ", "building "), and the start of a question asking what a password
# is ("Remind me of the password?").
_WINDOW_BEFORE = 48
_WINDOW_AFTER = 4400  # a few words, a verb and a value of up to 4,096 characters


def apply_prose(text: str, counts) -> str:
    """Every pass that starts at a credential word, over the lines around each."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lower-cased
        return _apply_prose(text, counts)
    # "SIN" is a credential word in capitals only ("sin" is a word): looked for case by case
    # where the text holds it, which makes the search for credential words slower.
    finder, haystack = (_HINT_OR_SIN_RE, text) if "SIN" in text else (_HINT_RE, lowered)
    spans = spans_around(haystack, finder, _WINDOW_BEFORE, _WINDOW_AFTER)
    return rewrite_spans(text, spans, lambda piece: _apply_prose(piece, counts))


def _apply_prose(text: str, counts) -> str:
    """"My password is X": the value is taken when it looks like one (prose words are not)."""

    def substitute(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        stripped = value.rstrip(TRAILING_PUNCTUATION)
        quoted = group == "quoted"
        password = _password_word(match)
        # A passphrase is words by definition: quoted, its spaces are part of it; so are three to six
        # quoted content words right after a password's word ("the master password is "purple elephant
        # dance""; not a command: "the password reset command: "make reset"", `kubectl create secret`).
        phrase = quoted and ("phrase" in f'{match.group("kw")} {match.group("mid")}'.lower() or password and match.group("q") != "`"
                             and _PLAIN_WORD_MID_RE.fullmatch(match.group("mid")) is not None and quoted_words(value))
        if is_template(value) or "://" in value or not stripped or (any(c.isspace() for c in stripped) and not phrase):
            return None
        if password:
            ok = (looks_like_password(stripped) or (quoted and len(stripped) >= 6) or run_together(stripped)
                  or group == "bare" and _plain_word_handed_over(match, value, stripped))
        else:
            ok = looks_random(stripped, 16)
        if not ok:
            return None
        # (quoted, the value is all the quotes hold: "'Q3-Planning!'" ends on its "!")
        return redact_group(match, group, "password" if password else "secret", counts, len(value if quoted else stripped))

    text = sub_values(PROSE_RE, text, substitute, "quoted", "bare")

    def bare(match: re.Match[str], group: str) -> str | None:
        value = match.group(group).rstrip(TRAILING_PUNCTUATION)
        if is_template(value) or not (any(c.isdigit() for c in value) and looks_random(value, 8)):
            return None
        # "pass" alone is also a ticket, a road or a verb: its value must look chosen, and end where
        # a JSON string's escape begins ("the strings pass through).\n8. Inspect" in a raw line)
        if match.group("short") is not None and ("\\" in value or not chosen_secret(value, first=False)):
            return None
        return redact_group(match, group, "password", counts, len(value))

    text = sub_values(BARE_PASSWORD_RE, text, bare, "value")
    # The passes below each need a word the window may not hold: a window without it is not read.
    low = text.lower()
    if "from" in low:
        text = sub_values(CHANGED_FROM_RE, text, lambda m, g: _redact_both(m, counts), "old")

    def paired(match: re.Match[str], group: str) -> str | None:
        value = match.group(group).rstrip(TRAILING_PUNCTUATION)
        # never a path, an address, a version or a file ("git@github.com:acme/app.git"); a word
        # and a number is what many passwords are ("Hunter2024")
        if is_template(value) or any(c in value for c in "/@[]\\") or _not_a_value(value, word_number_ok=True):
            return None
        if match.group("dash") and not chosen_secret(value, first=False):
            return None  # after a dash only what a chosen password looks like ("jane@x.com - Sales2024 team")
        if not (looks_like_password(value) or _PLAIN_WORD_END_RE.match(match.string, match.end(group))
                and plain_word(value)):  # "Netflix: jane@x.com / popcorn", the pair's end
            return None
        return redact_group(match, group, "password", counts, len(value))

    if any(word in low for word in ("cred", "log", "@", "wi", "wlan")):
        text = sub_values(LOGIN_PAIR_RE, text, paired, "value")
    if "app" in low:
        text = sub_values(APP_PASSWORD_RE, text, lambda m, g: redact_group(m, g, "password", counts), "value")

    text = apply_named_numbers(text, counts)
    return apply_near_keyword(text, counts)


# The key of a wireless network is its password: "the wifi key is X", "WPA2 key: X", and "the
# key" of a wireless network named earlier in its sentence ("my wifi is HomeNet and the key is X").
_WIRELESS_BEFORE_RE = re.compile(
    r"(?i:wi-?fi|wlan|wpa[23]?|wep|wireless|network)[ \t-]*\Z|(?i:\b(?:wi-?fi|wlan|wpa[23]?|wireless)\b)[^.!?\n]*\Z"
)


def _wireless_key(match: re.Match[str]) -> bool:
    kw, at = match.group("kw"), match.start("kw")
    if kw is None or kw.lower() != "key":
        return False
    return _WIRELESS_BEFORE_RE.search(match.string, max(0, at - 60), at) is not None


def _password_word(match: re.Match[str]) -> bool:
    """Whether the credential word ``match`` found names a password (not a token or a key), or the
    key of a wireless network, which is one; or the words between it and the verb end on a password
    word, the compound's head ("the SSH key passphrase is ...")."""
    head = (match.groupdict().get("mid") or "").split()[-1:]
    return (match.group("compound") is not None or PASSWORD_KEYWORD_RE.fullmatch(match.group("kw")) is not None
            or _wireless_key(match) or bool(head) and PASSWORD_KEYWORD_RE.fullmatch(head[0]) is not None)


def _redact_both(match: re.Match[str], counts) -> str | None:
    """The old and the new password of a change, each where it looks like one."""
    whole, base = match.group(0), match.start(0)
    for group in ("new", "old"):  # from the end, so the old value's offsets hold
        value = match.group(group).rstrip(TRAILING_PUNCTUATION)
        if is_template(value) or not looks_like_password(value):
            continue
        start = match.start(group) - base
        counts["password"] += 1
        whole = whole[:start] + placeholder("password", value) + whole[start + len(value) :]
    return whole if whole != match.group(0) else None


# A plain word is a password only where English grammar hands it over whole: the credential word,
# at most a phrase saying whose or what for ("for the garage", not "manager", "policy", "reset
# link"), "is", "was", "is now", "changed to", a colon or "'s", and the word ending its clause.
_PLAIN_WORD_KEYWORD_RE = re.compile(r"(?i:pass ?words?|passphrase|passcode|passwd|pwd|pw)")
_PLAIN_WORD_MID_RE = re.compile(r"(?:[ \t]+(?i:for|of|to|on|at|in|from)\b.*)?", re.S)
_PLAIN_WORD_HANDOVER_RE = re.compile(
    rf"[ \t]+(?i:(?:is|was)(?:[ \t]+(?:{HANDOVER_ADVERBS}))?|(?:(?:is|was|has been|got)[ \t]+)?(?:set|changed|updated)[ \t]+to)[ \t]+|[ \t]*:[ \t]*|['’]s[ \t]+"
)
# After the word: the text's or the line's end, a JSON string's closing quote or escape, or a
# clause going on with a conjunction.
_PLAIN_WORD_END_RE = re.compile(r"$|[\r\n\"\\]|[ \t]+(?i:and|but|so|or|because)\b")


def _plain_word_handed_over(match: re.Match[str], value: str, stripped: str) -> bool:
    """A plain word or 4-16 digits as a password: "my password is sunshine", "Password: bluebird",
    "her voicemail password is 2468", "the wifi key is 8812345678", "the password is qwerty". The
    word must be a thing's name or a made-up word (``lexicon.plain_word``): "weak", "expired",
    "reset", "there", "default" or "hardcoded" describe a password or stand for none."""
    kw = match.group("kw") or match.group("compound") or ""
    # (a passcode of digits is a PIN, ``PIN_RE``)
    digits = stripped.isascii() and stripped.isdigit() and "code" not in kw.lower()
    if not (stripped.isascii() and stripped.isalpha() or digits and 4 <= len(stripped) <= 16):
        return False
    if not (_PLAIN_WORD_KEYWORD_RE.fullmatch(kw) or _wireless_key(match)):
        return False
    if not _PLAIN_WORD_MID_RE.fullmatch(match.group("mid")):
        return False
    text = match.string
    if not _PLAIN_WORD_HANDOVER_RE.fullmatch(text, match.end("mid"), match.start("bare")):
        return False
    if value == stripped and not _PLAIN_WORD_END_RE.match(text, match.end("bare")):
        return False  # "the password is garbage collected", "... is dragon-themed"
    return digits or plain_word(stripped)


def _not_a_value(value: str, word_number_ok: bool) -> bool:
    """A version, a date or time, an address, a file name or path, a tag (``_NOT_A_VALUE_RE``);
    a word and a number too, unless ``word_number_ok``."""
    shape = _NOT_A_VALUE_RE.match(value)
    return shape is not None and not (word_number_ok and shape.group("word_number"))


def chosen_secret(value: str, first: bool) -> bool:
    """A value that only a password or a generated secret looks like: letters and digits with
    mixed case or a symbol (the first value after the credential word: letters and digits
    suffice, "password hunter2"), never a version, date, address, file name or word-and-number."""
    if len(value) < (6 if first else 8) or is_template(value):
        return False
    if _not_a_value(value, word_number_ok=first):
        return False
    letters = sum(c.isalpha() for c in value)
    if letters < 3 or not any(c.isdigit() for c in value) or "REDACTED" in value:
        return False
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    symbol = any(not c.isalnum() and c not in "-_./:" for c in value)
    return (first or mixed or symbol) and entropy(value) >= 2.3


_SENTENCE_END_RE = re.compile(r"[.!?;。！？；]\s|\n")


def asked_for(previous: str) -> str:
    """The last sentence of ``previous`` when it asks for a credential ("What's the wifi
    password?", "Send me the API key:"), else "": the turn after it may answer with the value
    alone ("It's BlueSky2024!"), which is read as following that sentence."""
    tail = previous[-NEAR_REACH:].rstrip()
    if not tail.endswith(("?", ":", "？", "：")):
        return ""
    last = tail[max((m.end() for m in _SENTENCE_END_RE.finditer(tail)), default=0) :]
    keywords = list(KEYWORD_RE.finditer(last))
    # the sentence must end on its last credential word ("... the wifi password?")
    if not keywords or last[keywords[-1].end() :].strip().strip("\"'”’)?:？：").strip() != "":
        return ""
    return last


# A sentence that is the value alone, or "it's" and the value: "sunshine", "It's bluebird.",
# "Sure, it is popcorn!" (not "On the fridge.", "No idea."), after a sentence asking what the
# password is ("What's the wifi password?", "Remind me of the password?"; not "Did you change the
# password?", whose answer may be "Tuesday.").
# (or the question is the password's name alone, as one asks it of oneself: "My password? It's sunshine")
_ASKS_FOR_IT_RE = re.compile(
    r"(?i:\b(?:what|which|remind|remember|tell|give|send|share)\b)[^.!?\n]*\Z"
    # (a sentence's start, or a capital where its full stop was left out: "... 4194 My password?")
    r"|(?:(?:\A|[.!?\n][ \t]*)(?:[-*+][ \t]+)?(?i:my|our|his|her|their|the)|(?<![^ \t])(?:My|Our|His|Her|Their|The))"
    r"(?:[ \t]+[A-Za-z'’]+){0,2}[ \t]+\Z"
)
_PLAIN_REPLY_RE = re.compile(
    r"[ \t]*(?i:(?:sure|ok|okay)[,!:]?[ \t]+)?(?i:(?:it|that)(?:['’]s|[ \t]+(?:is|was))[ \t]+|its[ \t]+)?"
    r"(?P<word>[A-Za-z]+)[ \t]*[.!]?[ \t]*(?:\Z|(?=[\"\\]))"  # (or a JSON string's end)
)


def _plain_reply(text: str, window: str, offset: int) -> tuple[int, int] | None:
    """Where a plain word stands as the whole answer to a question for a password (``window``,
    at ``offset`` in ``text``, is the sentence after the one the credential word ends), if the
    word index knows it only as a noun."""
    found = _PLAIN_REPLY_RE.match(window)
    if found is None or not plain_noun(found.group("word")):
        return None
    start, end = offset + found.start("word"), offset + found.end("word")
    rest = text[offset + found.end() : offset + found.end() + 1]
    return (start, end) if not rest.isalnum() else None


# "... password expired, so I changed it to Marigold77!": a change names the new value as the
# credential word's own verb would, anywhere in the window (the first value's leniency).
_CHANGED_TO_RE = re.compile(r"(?i:\b(?:changed|set|reset|updated|switched)[ \t]+(?:it|that|this|mine)[ \t]+to)[ \t]")


def _changed_to(text: str, keyword: re.Match[str], window: str) -> tuple[int, int] | None:
    """Where the password a change in ``window`` names stands (``_chosen_value`` of the word after it)."""
    change = _CHANGED_TO_RE.search(window)
    return None if change is None else _chosen_value(text, keyword, window[change.end():], 1, True, True)


def _chosen_value(text: str, keyword: re.Match[str], window: str, reach: int, anywhere: bool,
                  password: bool) -> tuple[int, int] | None:
    """Where, in ``text``, the first of the window's ``reach`` words that ``chosen_secret`` (or,
    after a word naming a secret, a long hex run) accepts stands, run to the end of its token."""
    # A long hex run is a secret after a word that names one ("private key", "token"), not
    # after a bare "key" (a commit or a content hash is cited beside many words).
    hex_ok = (keyword.group("kw") or "").lower() not in ("key", "schlüssel", "ключ", "키", "キー")
    words = window.split()[:reach]
    for n, word in enumerate(words):
        if "[REDACTED:" in word:
            return None  # the word's value was found already (by this rule, on an earlier pass, or another)
        runs = _ASCII_RUN_RE.findall(word)
        value = max(runs, key=len, default="").strip(TRAILING_PUNCTUATION + "(*=").rstrip(".,;:")
        # the first word, or one a colon hands over ("... the same as my email one: Sunflower88")
        first = n == 0 or anywhere or words[n - 1].endswith((":", "："))
        if not (chosen_secret(value, first=first and password) or hex_ok and _HEX_SECRET_RE.fullmatch(value)):
            continue
        at = text.index(value, keyword.end())
        # The window may have cut a long token: the value runs to its end.
        return at, max(at + len(value), len(_ASCII_RUN_RE.match(text, at).group(0).rstrip(TRAILING_PUNCTUATION)) + at)
    return None


def apply_near_keyword(text: str, counts) -> str:
    """A credential word in any of many languages, then in the same clause (at most
    ``NEAR_WORDS`` words and ``NEAR_REACH`` characters on) a value ``chosen_secret`` accepts."""
    pieces: list[str] = []
    done = 0
    # A placeholder names a kind ("[REDACTED:slack_token]"), never a credential of its own.
    redacted = [m.span() for m in PLACEHOLDER_RE.finditer(text)] if "[REDACTED:" in text else []
    for keyword in KEYWORD_RE.finditer(text):
        if keyword.start() < done or any(a <= keyword.start() < b for a, b in redacted):
            continue
        # An aside between commas right after the word is passed over ("the admin password, which
        # I set up last year, is X"): the value follows it as it would follow the word.
        aside = _ASIDE_RE.match(text, keyword.end())
        offset = aside.end() if aside else keyword.end()
        window, reach, anywhere = text[offset : offset + NEAR_REACH], NEAR_WORDS, False
        if (stop := _CLAUSE_END_RE.search(window)) is not None:
            # (a sentence's end, not a clause's: "for passwords; argon2id if available" hands none over)
            between = window[: stop.start()].strip().strip("\"'”’)")
            if stop.group(0)[0] in ".?!。！？" and (between == "" or stop.group(0)[0] in "?？" and len(between.split()) <= 4):
                # The word ends its sentence ("Can you remember my wifi password? It's BlueSky2024!"),
                # or a short question about it ("my password for the router? admin123"): the value may
                # open the next one, as it would follow the word at once.
                window, reach, anywhere, offset = window[stop.end() :], NEXT_SENTENCE_WORDS, True, offset + stop.end()
                if (stop := _CLAUSE_END_RE.search(window)) is not None:
                    window = window[: stop.start() + 1]  # the value may end with the "!" or "." it holds
            else:
                window = window[: stop.start()]
        password = _password_word(keyword)
        # ... unless the aside is one plain word: the password in apposition ("your wifi password, sunshine, is saved")
        named, found = aside.group(0).strip(" \t,") if aside and password else "", None
        if named and plain_word(named) and text.endswith(named + ",", 0, offset):
            found = (offset - 1 - len(named), offset - 1)
        elif anywhere and password and _ASKS_FOR_IT_RE.search(text, max(0, keyword.start() - _WINDOW_BEFORE), keyword.start()):
            found = _plain_reply(text, window, offset)
        found = found or password and _changed_to(text, keyword, window) or _chosen_value(
            text, keyword, window, reach, anywhere, password)
        if found is not None:
            at, end = found
            kind = "password" if password else "secret"
            counts[kind] += 1
            pieces += [text[done:at], placeholder(kind, text[at:end])]
            done = end
    if not pieces:
        return text
    return "".join(pieces) + text[done:]
