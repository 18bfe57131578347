"""scrub_secrets removes every credential an agent might paste, and nothing else.

Memory is stored and re-injected into prompts, so a leaked key would be repeated forever: each
secret in a realistic corpus (Markdown notes and session transcripts) must become a typed
placeholder. Over-redaction is a bug too: UUIDs, commit SHAs, URLs with ports and phrases like
"password reset" must survive untouched. Scrubbing must keep the number of lines (chunk line
ranges are computed on scrubbed text but cite the source file) and take time linear in the size of a file, however long its lines.

The fake secrets are generated at test time, so that the repository holds no key-shaped strings.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.text.scrub import ScrubResult, scrub_secrets
from memory_pipeline_tests.helpers.scaling import growth

RNG = random.Random(20261103)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    # Always mix in a digit and a letter of the alphabet, as real keys do.
    letters = [c for c in alphabet if c.isalpha()] or list(string.digits)
    body = "".join(RNG.choice(alphabet) for _ in range(n - 2))
    return body + RNG.choice(string.digits) + RNG.choice(letters)


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = ".".join(
    [
        b64url({"alg": "HS256", "typ": "JWT"}),
        b64url({"sub": "caroline", "exp": 1793697240}),
        rand(43),
    ]
)
SLACK_BOT = "xoxb-" + rand(11, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)
SLACK_HOOK = "https://hooks.slack.com/services/T0{}/B0{}/{}".format(
    rand(8, UPPER_DIGITS), rand(8, UPPER_DIGITS), rand(24)
)
BASIC = base64.b64encode(b"caroline:" + rand(14).encode()).decode()
RSA_KEY = "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----"
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----"
PEM_BODY = "\n".join(rand(64, ALNUM + "+/") for _ in range(6))


def card(prefix: str, length: int) -> str:
    """A number of ``length`` digits starting with ``prefix`` whose last digit is the Luhn check."""
    body = prefix + "".join(RNG.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(int(c) for c in reversed(body)))
    return body + str(-total % 10)


VISA, AMEX = card("4", 16), card("37", 15)


def iban(country: str, bban: str) -> str:
    """``bban`` as a ``country`` IBAN, its check digits computed (ISO 13616, mod 97)."""
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


DE_IBAN = iban("DE", "37040044" + rand(10, string.digits))

# (type, secret value, how it appears in a note)
SECRETS: list[tuple[str, str, str]] = [
    (t, v, f.format(v))
    for t, v, f in [
        ("aws_access_key", "AKIA" + rand(16, UPPER_DIGITS), "AWS key id: {}"),
        ("aws_access_key", "ASIA" + rand(16, UPPER_DIGITS), "temporary creds {} (expire at 5pm)"),
        ("aws_secret_key", rand(40, ALNUM + "/+"), "aws_secret_access_key = {}"),
        ("openai_key", "sk-proj-" + rand(100, ALNUM + "_-"), "export OPENAI_API_KEY={}"),
        ("openai_key", "sk-" + rand(48), "my old key was {}, please rotate"),
        ("anthropic_key", "sk-ant-api03-" + rand(90, ALNUM + "_-"), "ANTHROPIC_API_KEY: {}"),
        ("github_token", "ghp_" + rand(36), "git remote set-url origin https://{}@github.com/x/y"),
        ("github_token", "ghs_" + rand(36), "CI uses {}"),
        ("github_token", "github_pat_" + rand(22) + "_" + rand(59), "fine-grained: {}"),
        ("gitlab_token", "glpat-" + rand(20, ALNUM + "_-"), "GITLAB_TOKEN={}"),
        ("slack_token", SLACK_BOT, "bot token {}"),
        ("slack_token", "xoxp-" + rand(11, string.digits) + "-" + rand(24), "user token `{}`"),
        ("stripe_key", "sk_live_" + rand(24), "stripe.api_key = '{}'"),
        ("stripe_key", "rk_live_" + rand(24), "restricted {}"),
        ("google_api_key", "AIza" + rand(35, ALNUM + "_-"), "maps key {}."),
        ("bearer_token", rand(40, ALNUM + "._-"), "curl -H 'Authorization: Bearer {}' x.io"),
        ("basic_auth", BASIC, "Authorization: Basic {}"),
        ("jwt", JWT, "session cookie {}"),
        ("url_password", rand(18, ALNUM + "!$*"), "DATABASE_URL=postgres://app:{}@db:5432/app"),
        ("url_password", rand(12), "- broker: amqp://guest:{}@rabbit.local/"),
        ("password", rand(14, ALNUM + "!#%&"), 'db_password: "{}"'),
        ("password", "Summer2026!", "wifi password = Summer2026!"),
        ("password", "correct horse battery staple", "passphrase: 'correct horse battery staple'"),
        # a quoted passphrase handed over by a verb keeps its spaces; words run together in lower
        # case are a password, longer than the words describing one (LOOKALIKES)
        ("password", "tangerine rocket seventeen", 'the vault passphrase is "tangerine rocket seventeen"'),
        ("password", "bluebirdsingingatdawn", "our wifi password is bluebirdsingingatdawn, ask me again"),
        ("secret", rand(32), "api_key: {}"),
        ("payment_card", " ".join(VISA[i:i + 4] for i in range(0, 16, 4)), "paid with my card {}, it expires 12/27"),
        ("payment_card", AMEX, "the corporate amex {} is for travel"),
        ("card_code", str(RNG.randrange(100, 1000)), "cvv {}"),
        # a bank account by its IBAN: in groups of four, or unbroken
        ("iban", " ".join(DE_IBAN[i:i + 4] for i in range(0, 22, 4)), "wire the deposit to {} by Friday"),
        ("iban", iban("GB", "WEST" + rand(14, string.digits)), "IBAN: {}"),
        # a door or gate code is a PIN by another name; a social security number named as one
        ("access_code", str(RNG.randrange(1000, 10000)), "the gate code is {}, see you at six"),
        ("ssn", f"{RNG.randrange(100, 900)}-{RNG.randrange(10, 100)}-{RNG.randrange(1000, 10000)}", "my SSN is {}."),
        # an identity document's number, named as one
        ("passport", rand(1, string.ascii_uppercase) + rand(8, string.digits), "my passport number is {}, valid till 2031"),
        ("driving_licence", rand(5, string.ascii_uppercase) + rand(6, string.digits) + rand(5, UPPER_DIGITS),
         "Driving licence: {}"),
        ("secret", rand(30), '{{"client_secret": "{}"}}'),
        ("secret", rand(24), "SESSION_SECRET={}"),
        ("sendgrid_api_key", "SG." + rand(22) + "." + rand(43), "mail via {}"),
        ("slack_webhook", SLACK_HOOK, "alerts go to {}"),
        ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + rand(80, ALNUM + "_-"), "twine upload -p {}"),
        ("twilio_api_key", "SK" + rand(32, string.ascii_lowercase + string.digits), "twilio {}"),
        ("npm_token", "npm_" + rand(36), "//registry.npmjs.org/:_authToken={}"),
        ("private_key", PEM_BODY, RSA_KEY),
        ("private_key", PEM_BODY, SSH_KEY),
    ]
]

LOOKALIKES = """\
# Account notes

Caroline asked for a password reset on Monday; the reset link expires in 24 hours.
The bearer of bad news was Melanie. Tokens per second: 4500. Max tokens: 4096.
Our risk-based-approach-for-onboarding-2026 doc and the task-force-meeting-notes-v2 page.
Run id 123e4567-e89b-12d3-a456-426614174000, commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904.
sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
See http://localhost:8080/health and https://example.com:8443/a/b?x=1#frag.
Clone git@github.com:acme/memory.git or ssh://git@github.com/acme/memory.git.
Mail caroline@example.com; meeting at 09:30:00; ratio 3:2.
password: required
Your password is incorrect; the new password is autogenerated.
api_key: optional
password: ********
password = ${DB_PASSWORD}
password=os.environ["DB_PASSWORD"]
token: <your-token-here>
secret: {{ vault_secret }}
Authorization: Bearer <token>
postgres://user:${PGPASS}@db/app and https://user@host.example.com/
The passport number field is blank. Her secretary: Jane Doe.
My passport is expired, the passport office opens at 0900 and my driving licence was renewed in 2024.
Use `sk-` prefixed keys only in the vault; the AKIA prefix marks AWS key ids.
ghp_ tokens are classic GitHub tokens; eyJ starts a base64 JSON object.
Kubernetes secret names like db-credentials-2026 are fine.
Order 4111111111111112 shipped at 1732863000000; call +49 1512 3456789 or 4155552671000.
The error code is 4040, the zip code is 94103 and the promo code is 2024; ticket 123-45-6789 is closed.
Part DE12 3456 7890 1234 5678 90 and batch NL00ABNA0123456789 are not accounts: their check digits fail.
"""


def test_every_secret_in_a_markdown_note_is_redacted():
    note = "# Credentials I was sent\n\n" + "\n\n".join(
        f"- {line}" if i % 2 else line for i, (_, _, line) in enumerate(SECRETS)
    )
    result = scrub_secrets(note)
    for kind, secret, _ in SECRETS:
        for part in secret.split("\n"):
            assert part not in result.text, (kind, part)
        assert f"[REDACTED:{kind}]" in result.text, kind
    expected: dict[str, int] = {}
    for kind, _, _ in SECRETS:
        expected[kind] = expected.get(kind, 0) + 1
    assert result.counts == expected
    assert result.text.count("\n") == note.count("\n")


@pytest.mark.parametrize(
    "kind,secret,line", SECRETS, ids=[f"{i}-{s[0]}" for i, s in enumerate(SECRETS)]
)
def test_each_secret_alone_gets_its_type(kind, secret, line):
    result = scrub_secrets(line)
    assert result.counts == {kind: 1}
    assert secret.split("\n")[0] not in result.text
    assert "[REDACTED:" + kind + "]" in result.text


def test_lookalikes_are_left_alone():
    assert scrub_secrets(LOOKALIKES) == ScrubResult(LOOKALIKES, {})


def test_url_password_keeps_user_and_host():
    result = scrub_secrets("mysql://admin:p@ss:w0rd@10.0.0.5:3306/db and more")
    assert result.text == "mysql://admin:[REDACTED:url_password]@10.0.0.5:3306/db and more"


def test_assignment_keeps_key_and_quotes():
    assert scrub_secrets('password = "hunter2hunter2"').text == 'password = "[REDACTED:password]"'
    assert scrub_secrets("dbPassword: s3cr3t-value").text == "dbPassword: [REDACTED:password]"
    assert scrub_secrets("STRIPE_SECRET_KEY=abc123def456ghi789").counts == {"secret": 1}


def test_private_key_keeps_the_line_count():
    key = f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}\n-----END EC PRIVATE KEY-----"
    text = f"before\n```\n{key}\n```\nafter"
    result = scrub_secrets(text)
    assert result.counts == {"private_key": 1}
    assert result.text.splitlines()[2] == "[REDACTED:private_key]"
    assert result.text.count("\n") == text.count("\n")
    assert result.text.endswith("```\nafter")


def test_private_key_without_end_line_is_still_redacted():
    text = f"half a key:\n-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nand then the chat went on."
    result = scrub_secrets(text)
    assert result.counts == {"private_key": 1}
    assert not any(part in result.text for part in PEM_BODY.split("\n"))
    assert result.text.endswith("\nand then the chat went on.")
    assert result.text.count("\n") == text.count("\n")


def test_crlf_text_keeps_its_line_endings():
    text = "a\r\n-----BEGIN RSA PRIVATE KEY-----\r\n" + PEM_BODY.replace("\n", "\r\n") + (
        "\r\n-----END RSA PRIVATE KEY-----\r\nb"
    )
    result = scrub_secrets(text)
    assert result.text == "a\r\n[REDACTED:private_key]" + "\r\n" * 8 + "b"  # 7 in the key


def test_secrets_in_a_transcript_before_and_after_parsing():
    turns = [
        {"role": "user", "content": line, "ts": "2026-11-03T09:00:00Z", "turn_id": f"t{i}"}
        for i, (_, _, line) in enumerate(SECRETS)
    ]
    turns.append({"role": "assistant", "content": [{"type": "text", "text": LOOKALIKES}]})
    raw = "".join(json.dumps(t) + "\n" for t in turns)

    # Scrubbing the raw JSONL keeps it valid JSON line by line.
    scrubbed = scrub_secrets(raw)
    parsed = parse_transcript(scrubbed.text)
    assert parsed.skipped == () and len(parsed.turns) == len(turns)
    assert parsed.turns[-1].content == LOOKALIKES
    for kind, secret, _ in SECRETS:
        for part in secret.split("\n"):
            assert part not in scrubbed.text, (kind, part)
            assert json.dumps(part)[1:-1] not in scrubbed.text, (kind, part)

    # Parsing scrubs each field once the JSON is decoded, and finds the same secrets.
    direct = parse_transcript(raw)
    assert direct.secrets == scrubbed.counts
    assert sum(direct.secrets.values()) == len(SECRETS)
    for turn in direct.turns:
        assert not any(part in turn.content for _, secret, _ in SECRETS for part in secret.split("\n"))


def test_extra_patterns_are_custom_secrets():
    text = "ticket ACME-7731-XK and badge ACME-1200-QQ; not acme-lowercase"
    result = scrub_secrets(text, extra_patterns=[r"ACME-\d{4}-[A-Z]{2}"])
    assert result.text == "ticket [REDACTED:custom] and badge [REDACTED:custom]; not acme-lowercase"
    assert result.counts == {"custom": 2}
    grouped = scrub_secrets("locker=4411 door", extra_patterns=[r"locker=(\d+)", r"x*"])
    assert grouped.text == "locker=[REDACTED:custom] door"  # empty matches replace nothing
    with pytest.raises(ValueError, match="invalid extra secret pattern"):
        scrub_secrets("x", extra_patterns=["(unclosed"])


def test_empty_text():
    assert scrub_secrets("") == ScrubResult("", {})


def prose(size: int) -> str:
    rng = random.Random(3)
    # (no "was": "her password was agent." would hand a plain word over as a password)
    words = (
        "the agent remembered that Caroline prefers tea and her password reset got done "
        "yesterday while the token budget for the session stayed under the limit; see notes: "
        "meeting = Tuesday at 10:30 with https://example.com/docs and Apollo project updates"
    ).split()
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(8, 25))).capitalize() + "."
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def test_prose_scrubs_unchanged_in_time_linear_in_its_size():
    text = prose(400_000)
    assert scrub_secrets(text) == ScrubResult(text, {})
    # Linear gives ~4 for 4x the text; a pattern that backtracks over a line gives ~16.
    assert growth(scrub_secrets, prose, 100_000) < 8


def _base64_blob(size: int) -> str:
    rng = random.Random(5)
    return "data:image/png;base64," + "".join(rng.choice(ALNUM + "+/") for _ in range(size))


def _minified_json(size: int) -> str:
    return json.dumps([{"url": f"https://example.com/a/{i}", "n": i, "key": "v" * 40} for i in range(size // 70)])


@pytest.mark.parametrize("make", [_base64_blob, _minified_json], ids=["base64-blob", "minified-json"])
def test_pathological_long_lines_scrub_in_linear_time(make):
    """One long line (an inline image, minified JSON) must not make a pattern backtrack."""
    assert growth(scrub_secrets, make, 50_000) < 8


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_scrubs_without_raising_and_keeps_lines(text):
    once = scrub_secrets(text)
    assert once.text.count("\n") == text.count("\n")
    assert once.text.count("\r") == text.count("\r")
    twice = scrub_secrets(once.text)
    assert twice.text == once.text and twice.counts == {}


fragments = st.sampled_from(
    [s[2] for s in SECRETS] + LOOKALIKES.splitlines() + ["", " ", "\n", "=", ":", '"']
)


def test_a_value_turned_down_does_not_hide_the_assignment_glued_to_it():
    """"tokens: 4096" is no secret, and its value runs on into the next line's assignment when the
    two are pasted without a space: the assignment is still read, and its secret redacted."""
    text = "Max tokens: 4096.SESSION_SECRET=SURCsQKxFe20510VVjdyfT1s and more"
    once = scrub_secrets(text)
    assert once.text == "Max tokens: 4096.SESSION_SECRET=[REDACTED:secret] and more"
    assert once.counts == {"secret": 1}


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments, max_size=12), st.sampled_from(["", " ", "\n", "\r\n", "; "]))
@example(
    ["The bearer of bad news was Melanie. Tokens per second: 4500. Max tokens: 4096.",
     "SESSION_SECRET=SURCsQKxFe20510VVjdyfT1s", "SESSION_SECRET=SURCsQKxFe20510VVjdyfT1s",
     "temporary creds ASIAJ9Q716C1RSMVLK3F (expire at 5pm)"],
    "",
)
@example(  # a placeholder's kind ("slack_token") is no credential word for the value after it
    ["bot token xoxb-73165017239-4409153637097-kUZc10i3GgTzgSHgMw7Pil5d",
     "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
     "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
    "",
)
def test_mixed_corpus_is_idempotent_and_keeps_lines(parts, glue):
    text = glue.join(parts)
    once = scrub_secrets(text)
    assert once.text.count("\n") == text.count("\n")
    twice = scrub_secrets(once.text)
    assert twice.text == once.text and twice.counts == {}
