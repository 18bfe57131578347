"""Families of secrets that ``scrub_secrets`` finds beyond the providers it names one by one.

Four families, each general rather than a list of known strings:

- vendor prefixes: a literal prefix a provider puts on its tokens (``hf_``, ``whsec_``,
  ``xapp-``, ``SG.``, ``dop_v1_`` ...) followed by a token body of the provider's length;
- prose (``secrets.prose``): "my password is X", "密码是X", "the API key for staging was X";
- a command-line flag or an XML element named like a credential (``--password X``,
  ``<apiKey>X</apiKey>``), and a URL whose user information is a lone token;
- random tokens: an unlabelled 40-character AWS secret next to its key id, and long base62 or
  base64 runs whose character entropy (detect-secrets' Shannon entropy) only random data has.

Each value is checked before it is replaced, so that prose ("the password is required"),
identifiers (``getUserAccountSettings``), hashes and ids (hex only) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

from memory_pipeline.text.secrets.lexicon import plain_word
from memory_pipeline.text.secrets.lookalikes import not_a_secret, public_block_spans

# --- Vendor prefixes ----------------------------------------------------------------------------
# (placeholder type, pattern). The token must stand alone (see ``standalone``) and, unless the
# pattern is specific enough by itself, mix letters and digits as generated tokens do.
_VENDOR_PATTERNS: tuple[tuple[str, str], ...] = (
    ("huggingface_token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}"),
    ("slack_token", r"xapp-\d-[A-Za-z0-9-]{20,}"),
    ("slack_token", r"xox[a-z]-[A-Za-z0-9-]{20,}"),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9+/=]{24,}"),
    ("sendgrid_api_key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_\-=]{30,}"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("mailgun_key", r"key-[a-f0-9]{32}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}"),
    ("notion_token", r"(?:secret_|ntn_)[A-Za-z0-9]{40,}"),
    ("groq_key", r"gsk_[A-Za-z0-9]{40,}"),
    ("perplexity_key", r"pplx-[A-Za-z0-9]{40,}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{30,}"),
    ("xai_key", r"xai-[A-Za-z0-9]{40,}"),
    ("pinecone_key", r"pcsk_[A-Za-z0-9_]{40,}"),
    ("langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("google_oauth", r"(?:ya29\.[A-Za-z0-9_\-]{30,}|GOCSPX-[A-Za-z0-9_\-]{20,}|1//0[A-Za-z0-9_\-]{40,})"),
    ("grafana_token", r"gl(?:sa|c)_[A-Za-z0-9_=\-+/]{30,}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("docker_token", r"dckr_pat_[A-Za-z0-9_\-]{20,}"),
    ("sentry_token", r"sntry[su]_[A-Za-z0-9_=+/\-]{30,}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("tailscale_key", r"tskey-[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("facebook_token", r"EAA[A-Za-z0-9]{80,}"),
    ("new_relic_key", r"NRAK-[A-Z0-9]{27}"),
    ("dynatrace_token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-]{60,}"),
    ("flutterwave_key", r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X"),
    ("square_token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_\-]{40,}\.[A-Za-z0-9_\-]{20,}"),
    ("discord_webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{40,}"),
    ("azure_client_secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("alibaba_key", r"LTAI[A-Za-z0-9]{12,20}"),
    ("rubygems_key", r"rubygems_[a-f0-9]{48}"),
    ("nuget_key", r"oy2[a-z0-9]{43}"),
    ("supabase_token", r"sbp_[a-f0-9]{40}"),
    ("brevo_key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("shippo_token", r"shippo_(?:live|test)_[a-f0-9]{40}"),
    ("easypost_key", r"EZ[AT]K[a-zA-Z0-9]{54}"),
    ("prefect_key", r"pnu_[A-Za-z0-9]{36}"),
    ("contentful_token", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    ("twitter_token", r"A{20,}[A-Za-z0-9%]{30,}"),
    ("fly_token", r"fm\d_[A-Za-z0-9+/=_\-]{50,}"),
    ("openai_key", r"sk-(?:or-v1-|proj-|svcacct-|admin-)" r"[A-Za-z0-9_\-]{20,}"),
    ("firebase_key", r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}"),
    ("onepassword_secret_key", r"A3-[A-Z0-9]{6}-[A-Z0-9]{5,6}(?:-[A-Z0-9]{5}){4}"),
    ("bitlocker_recovery_key", r"\d{6}(?:-\d{6}){7}"),
)
VENDOR_RE = re.compile("|".join(f"(?P<v{i}>{pattern})" for i, (_, pattern) in enumerate(_VENDOR_PATTERNS)))
VENDOR_KINDS = {f"v{i}": kind for i, (kind, _) in enumerate(_VENDOR_PATTERNS)}


def standalone(text: str, start: int, end: int) -> bool:
    """True when text[start:end] is not glued to letters, digits or ``_`` on either side."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before == "_" or after.isalnum() or after == "_")


# --- Is this value random enough to be a credential? --------------------------------------------

_ENTROPY = Base64HighEntropyString()
_PLAIN_WORD_RE = re.compile(r"[A-Za-z][a-z]*")


def char_classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters ``value`` uses."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def looks_random(value: str, min_length: int = 12) -> bool:
    """A generated token or a chosen password: long enough, of mixed kinds of characters, and
    not a plain word (``Secret``, ``required``) or a repeated character (``vvvvvvvv``)."""
    if len(value) < min_length or _PLAIN_WORD_RE.fullmatch(value):
        return False
    return char_classes(value) >= 2 and entropy(value) >= 2.5


def looks_like_password(value: str) -> bool:
    """What someone says their password is: a digit, a symbol, or a mixed-case word."""
    if len(value) < 4 or len(value) > 200:
        return False
    if not any(c.isalpha() for c in value):
        return False  # a time, a number, a date
    if any(c.isdigit() for c in value) or any(not c.isalnum() for c in value):
        return len(set(value)) >= 3
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


# A value that stands for a secret without being one: a template, a reference, code, a mask.
_TEMPLATE_RE = re.compile(
    r"^[$<{%\[(]|\$\{|\{\{|%\(|\(\)|\.\.\.|\*{3}|x{6}|(?i:os\.|env\.|process\.|getenv|settings\.|config\.|self\.|redacted)"
    r"|^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+$"  # a reference such as var.db_password
)


def is_template(value: str) -> bool:
    return _TEMPLATE_RE.search(value) is not None


def entropy(value: str) -> float:
    return _ENTROPY.calculate_shannon_entropy(value)


# --- Flags, XML elements and URL user information ------------------------------------------------
# The flag may glue a word before the credential's name: -storepass, -keypass, --dbpassword.
_CRED = r"(?:[A-Za-z0-9]*[_-]?)(?:password|passwd|pass|pwd|token|secret|api[_-]?key|apikey|auth[_-]?token)"
FLAG_RE = re.compile(rf"(?<![\w-])--?(?i:{_CRED})(?:=|[ \t]+)(?P<q>[\"']?)(?P<value>[^\s\"']{{6,4096}})(?P=q)")
XML_RE = re.compile(
    r"<(?P<tag>[\w:.-]*(?i:password|passwd|secret|token|apikey|api_key|accesskey|privatekey)[\w:.-]*)>"
    r"[ \t]*(?P<value>[^<\s]{6,4096})[ \t]*</(?P=tag)>"
)
# "curl -u user:pw", "--user user:pw", "mysql -pSecret", "sshpass -p pw", a .netrc line,
# "docker login -u ci -p pw" (any login command), PowerShell's "ConvertTo-SecureString 'pw' -AsPlainText",
# "htpasswd -b .htpasswd bob pw" ("-nb bob pw": no file), Windows' "net user bob pw", "echo pw | sudo -S".
USER_PASSWORD_RE = re.compile(
    r"(?<![\w-])(?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"']{1,64}:(?P<value>[^\s\"']{4,200})"
    r"|(?<![\w-])(?:-u|--username)(?:=|[ \t]+)[^\s:]{1,64}[ \t]+-p(?:=|[ \t]+)[\"']?(?P<login>[^\s\"']{4,200})"
    r"|(?i:ConvertTo-SecureString)[ \t]+(?:-String[ \t]+)?[\"'](?P<plain>[^\"'\n]{4,200})[\"'][ \t]+(?i:-AsPlainText)"
    r"|\b(?:mysql|mysqldump|mariadb|mysqladmin)\b[^\n]{0,200}?[ \t]-p(?P<q>[\"']?)(?P<glued>[^\s\"']{4,200})"
    r"|\bsshpass[ \t]+-p[ \t]*[\"']?(?P<sshpass>[^\s\"']{4,200})"
    r"|\blogin[ \t]+\S{1,64}[ \t]+password[ \t]+(?P<netrc>[^\s\"']{4,200})"
    r"|\bhtpasswd[ \t]+-(?=[a-zA-Z]*b)(?:(?=[a-zA-Z]*n)[a-zA-Z]+|(?![a-zA-Z]*n)[a-zA-Z]+[ \t]+\S{1,200})[ \t]+\S{1,64}"
    r"[ \t]+[\"']?(?P<htpasswd>[^\s\"']{4,200})"
    r"|\bnet[ \t]+user[ \t]+\S{1,64}[ \t]+[\"']?(?P<net_user>[^\s\"'/*][^\s\"']{3,200})"
    r"|\becho[ \t]+[\"']?(?P<sudo>[^\s\"'|]{4,200})[\"']?[ \t]*\|[ \t]*sudo[ \t]+(?:-[A-Za-z]+[ \t]+)*?-[A-Za-z]*S\b"
)
# A user's field and then a password's, "pass" or "pw" naming the second: "user: admin pass: admin",
# "user=admin pass=hunter", "login: jdoe, pw: sunshine" (alone, "pass" is also a ticket, a road or
# a verb).
USER_PASS_FIELDS_RE = re.compile(
    r"(?<![\w-])(?i:user(?:name)?|login)[ \t]*[:=][ \t]*[^\s,;:=\"'`]{1,64}[ \t]*[,;]?[ \t]+"
    r"(?i:pass|pw|pwd)[ \t]*[:=][ \t]*(?P<value>[^\s,;\"'`]{3,200})"
)
URL_TOKEN_RE = re.compile(r"://(?P<value>[^\s:/?#@\[\]\"'<>]{16,256})@(?=[\w\[])")

# --- Random tokens -------------------------------------------------------------------------------
AWS_SECRET_RUN_RE = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_NEIGHBOURHOOD = 300  # characters either side of a key id where its secret is looked for
TOKEN_RUN_RE = re.compile(r"(?<![A-Za-z0-9+/_\-.%])[A-Za-z0-9+/_\-.%]{32,}+={0,2}(?![A-Za-z0-9+/_\-=.%])")
# A hash that names its algorithm cites content, it is not a credential (SRI, Docker digests).
# Inline data ("data:image/png;base64,...") is content, not a credential either.
# A public key ("ssh-ed25519 AAAA...") is meant to be shared.
_DIGEST_PREFIX_RE = re.compile(
    r"(?i:(?:sha\d{1,3}|md5|blake2b?|xxh\d*|sum)[-:=]\s*|;base64,|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+) )$"
)
_DIGEST_RUN_RE = re.compile(r"(?i:sha\d{1,3}|md5|blake2b?)-")
MIN_TOKEN_ENTROPY = 4.2  # random base62 of 32+ characters: 4.5-5.0; identifiers and words: < 4


def random_token(text: str, start: int, end: int) -> bool:
    """A long run of token characters that only random data looks like.

    Hex-only runs are hashes and ids (content hashes, chunk ids, commit SHAs): never. Paths and
    identifiers have few digits and low entropy; a digest with its algorithm named is a citation.
    """
    run = text[start:end].rstrip("=")
    if run.count("%") > 6:
        return False  # URL-encoded prose, not an encoded token
    if all(c in "0123456789abcdefABCDEF-" for c in run) or "REDACTED" in run:
        return False
    base64 = "+" in run or text[start:end].endswith("=")
    # A slug has a separator every few characters, URL-safe random data one in about 32: the
    # allowance grows with the run (a 600-character token holds a dozen of each).
    many = max(4, len(run) // 16)
    if (run.count("/") > 2 and not base64) or run.count("-") > many or run.count("_") > many or run.count(".") > many - 1:
        return False  # a path or a slug ("a/b/c/d", "my-long-file-name-v2")
    digits = sum(c.isdigit() for c in run)
    if digits < 2 or not any(c.isupper() for c in run) or not any(c.islower() for c in run):
        return False
    if _DIGEST_RUN_RE.match(run) or _DIGEST_PREFIX_RE.search(text, max(0, start - 24), start):
        return False
    return entropy(run) >= MIN_TOKEN_ENTROPY and not not_a_secret(text, start, end)


# --- Applying the families ----------------------------------------------------------------------

PLACEHOLDER = "[REDACTED:{}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:\w+\]")
_NEWLINES_RE = re.compile(r"\r\n|\r|\n")
TRAILING_PUNCTUATION = ".,;:!?)]}>"
# What hands a value over after its name, in the languages the prose rules read: "is", "was
# changed to", "ist", "lautet", "est", "es", "é", "jest", "это" ...
HANDOVER_ADVERBS = r"still|now|just|also|always|[a-z]{3,12}ly"  # ("literally", "basically", "currently")
HANDOVER_VERBS = (
    r"(?:is|was|has been|got) (?:set|changed|reset|updated) to|(?:set|changed|reset|updated) to|"
    # "the door code changed, it's now 4491", "... changed again, now it's 7719"
    r"(?:has |was |got )?(?:changed|reset|updated)(?: again)?[,;]? (?:now )?(?:it['’]s|it is)(?: now)?|"
    # an adverb between: "my PIN is still 4471", "the password is literally X"
    rf"(?:is|was) (?:{HANDOVER_ADVERBS})|"
    r"is|was|ist|war|lautet|lautete|c['’]est|est|était|es|era|é|è|er|är|var|jest|to|je|on|это|"
    r"now|है|هي|هو|היא|הוא"
)


def placeholder(kind: str, secret: str) -> str:
    """``[REDACTED:kind]`` followed by every line break the secret spanned (line numbers hold)."""
    breaks = "".join(_NEWLINES_RE.findall(secret)) if "\n" in secret or "\r" in secret else ""
    return PLACEHOLDER.format(kind) + breaks


def redact_group(match: re.Match[str], group: int | str, kind: str, counts, length: int | None = None) -> str:
    """The matched text with the value in ``group`` (its first ``length`` characters, when given)
    replaced by its placeholder, counted under ``kind``."""
    whole, base = match.group(0), match.start(0)
    start, end = match.start(group) - base, match.end(group) - base
    if length is not None:
        end = start + length
    counts[kind] += 1
    return whole[:start] + placeholder(kind, whole[start:end]) + whole[end:]


# Every vendor token lies inside a run of 16+ URL-safe characters: the alternation of prefixes
# is tried inside such runs only (over a whole text it costs a second per megabyte of prose).
_CANDIDATE_RE = re.compile(r"[A-Za-z0-9_\-.+/=~:%]{16,}")


def apply_vendor_prefixes(text: str, counts) -> str:
    pieces: list[str] = []
    done = 0
    for run in _CANDIDATE_RE.finditer(text):
        at = run.start()
        while (match := VENDOR_RE.search(text, at, run.end())) is not None:
            at = max(match.end(), at + 1)
            if not standalone(text, match.start(), match.end()):
                continue
            kind = VENDOR_KINDS[match.lastgroup or ""]
            counts[kind] += 1
            pieces += [text[done : match.start()], placeholder(kind, match.group(0))]
            done = match.end()
    if not pieces:
        return text
    return "".join(pieces) + text[done:]


def _value_group(match: re.Match[str], *names: str) -> str | None:
    return next((n for n in names if match.group(n) is not None), None)


Substitute = Callable[[re.Match[str], str], str | None]
"""``substitute(match, group)``: the replacement of a match whose value is in ``group``, or None."""


def sub_values(pattern: re.Pattern[str], text: str, substitute: Substitute, *value_groups: str) -> str:
    """``pattern.sub`` for a label followed by its value, in the first of ``value_groups`` that
    holds it: ``substitute(match, group)`` returns the replacement, or None to leave the match as
    it is. The search then goes on from where the value starts, not from its end: a value turned
    down may hold another label ("Max tokens: 4096.SESSION_SECRET=..." pasted without a space),
    whose secret a plain ``sub`` would skip and leave in the text."""
    pieces: list[str] = []
    done = at = 0
    while (match := pattern.search(text, at)) is not None:
        group = _value_group(match, *value_groups)
        new = substitute(match, group)
        if new is None:
            at = max(match.start(group) if group else match.end(), match.start() + 1)
            continue
        pieces += (text[done : match.start()], new)
        done = at = max(match.end(), match.start() + 1)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def spans_around(
    text: str,
    finder: re.Pattern[str],
    before: int,
    after: int,
    keep: Callable[[re.Match[str]], bool] | None = None,
    extra_lines: int = 0,
) -> list[tuple[int, int]]:
    """[start, end) spans of ``before``/``after`` characters around each finder match, cut at
    line ends (or ``extra_lines`` lines further) and merged when they touch. Bounded context keeps
    a megabyte-long line (minified JSON, a base64 blob) linear where whole-line scans would not be.
    """
    spans: list[tuple[int, int]] = []
    for match in finder.finditer(text):
        if keep is not None and not keep(match):
            continue
        # Line ends are looked for only inside the window: linear however long the line.
        lo = max(0, match.start() - before)
        start = text.rfind("\n", lo, match.start()) + 1 or lo
        hi = min(len(text), match.end() + after)
        end = text.find("\n", match.end(), hi)
        for _ in range(extra_lines):
            end = text.find("\n", end + 1, hi) if end >= 0 else -1
        end = hi if end < 0 else end
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans


def rewrite_spans(
    text: str, spans: list[tuple[int, int]], rewrite: Callable[[str], str]
) -> str:
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        piece = text[start:end]
        new = rewrite(piece)
        if new != piece:
            pieces.append(text[done:start])
            pieces.append(new)
            done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def sub_values_in(
    text: str, spans: list[tuple[int, int]], pattern: re.Pattern[str], substitute: Substitute, *value_groups: str
) -> str:
    """``sub_values`` over the ``spans`` of ``text`` only (see ``spans_around``)."""
    return rewrite_spans(text, spans, lambda piece: sub_values(pattern, piece, substitute, *value_groups))


def apply_labelled(text: str, counts) -> str:
    """Flags, XML elements and URL user information that name or hold a credential."""

    def flag_or_xml(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        if is_template(value) or not (looks_random(value, 8) or looks_like_password(value)):
            return None
        return redact_group(match, group, "secret", counts)

    def url_token(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        if "REDACTED" in value or not looks_random(value, 16) or entropy(value) < 3.5:
            return None
        return redact_group(match, group, "url_token", counts)

    if "--" in text or "-p" in text:
        text = sub_values(FLAG_RE, text, flag_or_xml, "value")
    if "</" in text:
        text = sub_values(XML_RE, text, flag_or_xml, "value")
    if "@" in text:
        text = sub_values(URL_TOKEN_RE, text, url_token, "value")

    def user_password(match: re.Match[str], group: str) -> str | None:
        value = match.group(group)
        if is_template(value) or not (looks_like_password(value) or looks_random(value, 8)):
            return None
        return redact_group(match, group, "password", counts)

    if ("-u" in text or "--user" in text or "-p" in text or "password" in text or "-AsPlainText" in text
            or "htpasswd" in text or "net user" in text or "sudo" in text):
        text = sub_values(USER_PASSWORD_RE, text, user_password, "value", "login", "plain", "glued", "sshpass", "netrc",
                          "htpasswd", "net_user", "sudo")

    def fields(match: re.Match[str], group: str) -> str | None:
        value = match.group(group).rstrip(TRAILING_PUNCTUATION)
        digits = value.isdigit() and len(value) >= 4
        if is_template(value) or not (looks_like_password(value) or plain_word(value) or digits):
            return None
        return redact_group(match, group, "password", counts, len(value))

    low = text.lower()
    if ("user" in low or "login" in low) and ("pass" in low or "pw" in low):
        text = sub_values(USER_PASS_FIELDS_RE, text, fields, "value")
    return text


def apply_aws_pairs(text: str, counts) -> str:
    """An AWS secret key is often pasted bare beside its key id: look near each redacted id."""
    marker = PLACEHOLDER.format("aws_access_key")
    if marker not in text:
        return text
    spans = []
    at = text.find(marker)
    while at >= 0:
        spans.append((max(0, at - AWS_NEIGHBOURHOOD), at + len(marker) + AWS_NEIGHBOURHOOD))
        at = text.find(marker, at + 1)

    def near(match: re.Match[str]) -> bool:
        return any(lo <= match.start() < hi for lo, hi in spans)

    def substitute(match: re.Match[str]) -> str:
        run = match.group(0)
        if not near(match) or char_classes(run) < 3 or entropy(run) < 3.5:
            return run
        counts["aws_secret_key"] += 1
        return PLACEHOLDER.format("aws_secret_key")

    return AWS_SECRET_RUN_RE.sub(substitute, text)


def apply_random_tokens(text: str, counts) -> str:
    public = public_block_spans(text)

    def substitute(match: re.Match[str]) -> str:
        if any(lo <= match.start() < hi for lo, hi in public) or not random_token(match.string, match.start(), match.end()):
            return match.group(0)
        counts["high_entropy_token"] += 1
        return PLACEHOLDER.format("high_entropy_token")

    return TOKEN_RUN_RE.sub(substitute, text)
