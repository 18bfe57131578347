"""Proves: the scrubber catches credentials by family, not by a list of strings, and leaves
ordinary text alone.

Each of the 100+ formats of ``secret_corpus`` (vendor prefixes, labelled values in env, YAML,
JSON, TOML, XML, INI, properties, flags and connection strings, URL user information, .pgpass
lines, Terraform and Kubernetes blocks that name a credential in one field and hold it in another,
prose in 16 languages and scripts, PEM and PGP blocks, JWTs, random tokens of any length, an AWS
secret with no label beside its key id) is generated afresh under several seeds, so a rule that
only knows one generated value fails; each is also found inside a JSON transcript line, where
quotes, line breaks and non-Latin letters are escaped. The lookalikes are what memory text is
full of (hashes that cite content, lock files, content ids, base64 of plain JSON, ids the pipeline
makes, paths and slugs, code, certificates, inline images, prose about passwords and keys) and
must come back unchanged. Also: wallet recovery phrases however they are written, numbers named
for what they open, passwords given in other ways than "my password is X" (with their user,
before the credential word, in the sentence or chat turn after a question for them), and long
hostile runs of what each of those rules reads, scrubbed in time linear in their length.
"""

from __future__ import annotations

import base64
import json
import random
import unicodedata

import pytest
from mnemonic import Mnemonic

from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.text.scrub import ScrubResult, scrub_secrets
from memory_pipeline_tests.helpers.scaling import growth
from memory_pipeline_tests.secret_corpus import corpus

LOOKALIKES = [
    "def getUserAccountSettingsForTenant2(self): return None",
    "integrity sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==",
    "digest: sha256:3b8f8c0e4d9f1a2b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b",
    "chunk 4f9a2c7e1b3d5f6a8c0e2a4b6d8f0a1c cites memory/2026-11-02.md#L3-L9",
    "run 8a1f3c2e-5b7d-4e9f-a1c3-5e7f9b1d3f5a; turn D12:7; session sess-20261113-bl02",
    "img data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    "path memory/projects/2026/q4-planning/meeting-notes-with-design-team-v3.md",
    "The key is on the kitchen table. My password is required to log in. Token limit is 4096.",
    "The password for the wifi is on the fridge. The secret ingredient is cinnamon.",
    "Use the keyboard shortcut Ctrl+K. The tokenizer splits words. sig: figure 3.",
    "passport_number: X1234567 ; compass = north-north-west ; bypass: true",
    "Revoke the service account token: `lumen tokens revoke gitlab-ci nightly-job`.",
    "password = ${DB_PASSWORD} and --password=$PGPASS and <token>{{ vault_token }}</token>",
    "The meeting is at 10:30; my password was reset at 09:15 yesterday.",
    "add ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx7Q2mK9vL4pN8sW3zT6yB1cH5dJ0fG2aE4uR8 me@host to authorized_keys",
    "password 2FA enabled for all; the password reset flow v2 2024",
    # structured values that look random to an entropy measure
    "event eyJldmVudCI6ICJwYWdlX3ZpZXciLCAicGF0aCI6ICIvcHJpY2luZyIsICJ0cyI6IDE3OTgwMDAwMDB9 logged",
    "pinned QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG on IPFS",
    "github.com/acme/lib v1.4.2 h1:Jb4ZuB9Gs0X1q3mH9nW2bT5kR7vL8pQ0sD4fG6hJ2kM=",
    '"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQBBY8bhm+ZF9/Tx0Vz7sXlqMwBnWVmIm6D9gBF6ETaoq8ew=="',
    "sent 0.1 BTC to 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2 yesterday",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTES\n-----END CERTIFICATE-----",
    '    string accessToken = responseData["access_token"];',
    "      'client_secret' => APPLE_CLIENT_SECRET,",
    "run `unzip ~/Downloads/flutter_macos_arm64_3.7.3-stable.zip` first",
    "read <https://medium.com/@FindTheParagon/paragon-papers-12-29-4a21382bb6e4> today",
    "use a password manager like LastPass or 1Password",
    "the password reset for user42 is done; password policy ISO-27001 applies since v2.3.1-beta",
    # numbers beside the words that name a PIN, a code, a combination or an account
    "The PIN for the garage is in the drawer; the pin for the poster is 3 cm long.",
    "the verification code expired after 10 minutes; backup codes are stored in 1Password",
    "I bought a combination lock for 12 dollars; the combination of flavors was 3-4-5 stars",
    "Account #12 was closed in 2019; my account number is on the statement",
    # a credential word beside a name, a ticket, an address or a path
    "I use LastPass as my password manager; we use Okta as the login provider",
    "boarding pass AB12CD34 for gate 5; season pass 2025 holders; my password's fine",
    "git clone git@github.com:acme/app.git; email me at jane@x.com: Tuesday works",
    "the password was changed from weekly to monthly rotation; credentials: see vault/prod",
    "I forgot my password. Then Windows asked me again. I reset my password. Version 2024 came out.",
    "Do you use a password manager? It's really helpful. This is my password manager of choice.",
    "Use bcrypt with cost 12 for passwords; argon2id if available.",
    "We moved from LastPass to 1Password for shared passwords.",
    '{"role": "assistant", "content": "the holes where the strings pass through).\\n8. **Inspect for damage**"}',
    "wifi: 2.4GHz / 5GHz; wifi: on / off; wifi 6/6E support; the door code changed in 2024",
    # a citation after a sentence about a password (dreamed files cite every line so)
    "- Alice uses a new password everywhere [corpus · ops-bot/sessions/alice/corpus.jsonl#L249]",
    # a plain word after a credential word that describes the password, or is no handover
    "my password is weak; the password was reset. Password: required. The password is expired!",
    "the password is the same, my password is there, password: default, the password is plaintext",
    "Please reset the password on staging. The password manager is software. The password is meeting the rules.",
    "the password is garbage collected; the password is due Friday; my password is in the vault",
    "I forgot the answer to my security question. The answer to my security question is stored in 1Password.",
    "the answer is 42; the passcode expires in 2024; the combination of flavors was 3-4-5 stars",
    "the password is 12 characters long; my password expires in 2024; the password policy is 2024",
    "boarding pass is AB12CD34; season pass is 2025; the pass is free; my social is great",
    "I changed my boarding pass to seat 14C; they switched the pass to Tuesday; we updated the season pass to 2025",
    "I set the pass to v2.1.3; he set the pass to 2 hours; set the pass to ${ADMIN_PASS}",
    "Did you change the password for the router? Yesterday I did. What's the wifi password? Room 204 has it.",
    "my PIN? it's on the card. The answer is Mr. Smith's fault.",
    'the password is "not set yet"; the password field says "left blank"; the password is "the same as before"',
    'the password reset command: "make reset password"; the password command is `kubectl create secret`',
    "revoke Keisha's old personal token: `lumen tokens list`, then `lumen tokens revoke <token_id>`",
    "the PIN pads sold this year: 4500 units; the password policy changed and the new one is stricter",
    "the bank account is closed since 2020; my savings account was 2% interest; my account is locked",
    "- Alarm: 0630\n- Building: 1984\n- Ratio: 3 / 4\n- Path: src / main\n- Season: 2024 / 2025\n- Gate: B12\n- Door: open at 9",
    "the code review changed it to 2024 style; the password is long, not today; the security word list is long; the PIN's 4 digits long",
    "Sign in with Google and Office365 works; log in with your email and password123",
    "the password, as I said, is long and random; the combination 3-4-5 of flavors; wifi use is 40 / 50 GB",
    "the PIN (4 digits) is required; the door code at 9am was changed",
    "contact: jane@x.com - Sales2024 team lead; write to mark@me.com - thanks",
    "email me at jane@x.com / Tuesday works; jane@x.com / phone",
    "the tax id is pending; the tax ID is 12 pages; tax id 2024; NHS number is on the letter; a PIN 2 digits",
    "health insurance card 12 months; Since 2019 I've had the same tax ID; the PIN 4 times; syntax 123456",
    # words around an "=", and settings about a password rather than of it
    "the agent and password = tea. password_algorithm = argon2\npassword_length = 12\npassport: sunshine",
    'password: required\n"password": "required"\npassword = getpass\npassword = None',
    # a code named in another language that opens nothing, or no code handed over
    "Le code de la route est 2024. Der Code der Anwendung ist 2000 Zeilen lang. el código de la puerta cambió en 2024",
    # a change of a password's rules, or of something else
    "I reset my password and set it to expire in 90 days; password policy changed, we set it to v2.1",
    "my password was too short so I changed it to 12 characters; the API token expired, I set it to rotate2 weekly",
    # cookies without a credential, and the word in prose
    "I cleared the cookie: it was stale. cookie: theme=dark; lang=en-US; Set-Cookie: Path=/; Domain=.example.com",
    # commands that take no password, or prompt for it
    "htpasswd -c .htpasswd bob; net user admin *; net user admin /delete; echo done | sudo tee /etc/x; echo $PASS | sudo -S ls",
    # a password word inside a key's phrase, or a key's passphrase described
    "the api key for the password manager is weak; the key passphrase is stored in vault; passcode 12 characters",
    # words of the recovery-phrase list, but prose: its short words are in no list
    "Actually the brave family found a simple way to enjoy nature: a picnic near the lake at noon.",
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_format_is_redacted_whatever_its_random_body(seed):
    planted = corpus(seed)
    assert len(planted) >= 60
    missed = []
    for entry in planted:
        result = scrub_secrets(entry.line)
        if any(part in result.text for secret in entry.secrets for part in secret.split("\n")):
            missed.append(entry.name)
        assert result.text.count("\n") == entry.line.count("\n")
        assert sum(result.counts.values()) >= 1
    assert missed == []


def test_all_formats_in_one_note_keep_its_lines():
    planted = corpus(7)
    note = "\n\n".join(f"- {p.line}" for p in planted)
    result = scrub_secrets(note)
    assert result.text.count("\n") == note.count("\n")
    for entry in planted:
        for secret in entry.secrets:
            assert not any(part in result.text for part in secret.split("\n")), entry.name
    assert scrub_secrets(result.text) == ScrubResult(result.text, {})  # idempotent


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_left_alone(text):
    assert scrub_secrets(text) == ScrubResult(text, {})


@pytest.mark.parametrize("language", ["english", "spanish", "french", "italian", "czech"])
def test_a_recovery_phrase_is_redacted_however_it_is_written(language):
    """Twelve to twenty-four words of one BIP-39 list in a row: plain, with commas, numbered one
    per line, in capitals, or with accents written as combining marks."""
    rng = random.Random(language)
    words = Mnemonic(language).wordlist
    phrase = [unicodedata.normalize("NFC", rng.choice(words)) for _ in range(24)]
    numbered = "\n".join(f"{i}) {w}" for i, w in enumerate(phrase, 1))
    for text, kept in (
        (f"my recovery phrase is {' '.join(phrase[:12])}. Keep it safe", "my recovery phrase is [REDACTED:seed_phrase]. Keep it safe"),
        (f"seed: {', '.join(phrase[:18]).upper()}!", "seed: [REDACTED:seed_phrase]!"),
        (f"Seed words:\n{numbered}\n(on paper)", "Seed words:\n1) [REDACTED:seed_phrase]" + "\n" * 24 + "(on paper)"),
        (unicodedata.normalize("NFD", f"mine: {' '.join(phrase[:12])} ok"), "mine: [REDACTED:seed_phrase] ok"),
    ):
        assert scrub_secrets(text) == ScrubResult(kept, {"seed_phrase": 1}), text
    # eleven words are no phrase (the longest run of list words in the dev sets' prose is nine)
    eleven = " ".join(phrase[:11])
    assert scrub_secrets(f"{eleven}. Then") == ScrubResult(f"{eleven}. Then", {})


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("The PIN for the garage is 4821.", "The PIN for the garage is [REDACTED:pin]."),
        ("the code to my front door is 246810", "the code to my front door is [REDACTED:access_code]"),
        ("Your authentication code: 123456", "Your authentication code: [REDACTED:one_time_code]"),
        ("the combination to the office safe is 12-34-56", "the combination to the office safe is [REDACTED:combination]"),
        ("padlock combo: 7 21 3", "padlock combo: [REDACTED:combination]"),
        ("my 2FA backup codes are 8421-3390, 1177-2045 and 9a8b7c6d", "my 2FA backup codes are [REDACTED:recovery_code]"),
        ("my account number is 000123456789 and routing 021000021", "my account number is [REDACTED:bank_account] and routing 021000021"),
        # passwords given with their user, before the credential word, as a change or by a dash
        ("creds are admin:Sup3rS3cret for now", "creds are admin:[REDACTED:password] for now"),
        ("login: bob / Hunter2024", "login: bob / [REDACTED:password]"),
        ("jane.doe@gmail.com:Sunny!Day7", "jane.doe@gmail.com:[REDACTED:password]"),
        ("I typed P@ssw0rd123 as the password.", "I typed [REDACTED:password] as the password."),
        ("my bank password was changed from Tulip55 to Daisy66", "my bank password was changed from [REDACTED:password] to [REDACTED:password]"),
        ("Password - Bluebird99", "Password - [REDACTED:password]"),
        ("ssh root@10.0.0.4 with pass Kx8#mq2Lz", "ssh root@10.0.0.4 with pass [REDACTED:password]"),
        ("gmail app password abcd efgh ijkl mnop", "gmail app password [REDACTED:password]"),
        # the credential word ends its sentence and the value opens the next; the value comes first
        ("Can you remember my wifi password? It's BlueSky2024!", "Can you remember my wifi password? It's [REDACTED:password]!"),
        ("The router admin password? Sure: Tr0ub4dor&3", "The router admin password? Sure: [REDACTED:password]"),
        ("Tr0ub4dor&3 is the new wifi password", "[REDACTED:password] is the new wifi password"),
        ("I'll use Tr0ub4dor&3 for the password.", "I'll use [REDACTED:password] for the password."),
        # in other languages: a hyphened compound, what a PIN opens, an account number
        ("Mein WLAN-Passwort ist Sonnenblume77", "Mein WLAN-Passwort ist [REDACTED:password]"),
        ("Die PIN für die Garage ist 4821", "Die PIN für die Garage ist [REDACTED:pin]"),
        ("número de cuenta 0123456789012", "número de cuenta [REDACTED:bank_account]"),
        ("The access code for the Wi-Fi is Garden2024", "The access code for the Wi-Fi is [REDACTED:password]"),
        # a note's short lines: a network and its password, a code by its name alone
        ("- Wi-Fi: HomeNet / BlueSky2024", "- Wi-Fi: HomeNet / [REDACTED:password]"),
        ("door code 4821#", "door code [REDACTED:access_code]#"),
        # a passcode of digits is a PIN; a phone's unlock code; a combination that names no lock
        ("My iPhone passcode is 1234.", "My iPhone passcode is [REDACTED:pin]."),
        ("her phone unlock code is 2580", "her phone unlock code is [REDACTED:access_code]"),
        ("The combination is 12-34-56", "The combination is [REDACTED:combination]"),
        ("the alarm disarm code is 3344", "the alarm disarm code is [REDACTED:access_code]"),
        ("The PIN to my debit card is 7 7 3 1", "The PIN to my debit card is [REDACTED:pin]"),
        ("My social is 078-05-1120", "My social is [REDACTED:ssn]"),
        # digits alone as a password; "pass" with a value only a chosen password looks like
        ("her voicemail password is 2468", "her voicemail password is [REDACTED:password]"),
        ("and the pass is Gr33nDay!", "and the pass is [REDACTED:password]!"),
        ("I set the admin pass to hunter2 yesterday", "I set the admin pass to [REDACTED:password] yesterday"),
        ("we changed the wifi pass to Maple2024.", "we changed the wifi pass to [REDACTED:password]."),
        # "it's" after a comma or the question for it; a value a colon hands over later in the clause
        ("my bank PIN? It's 4471.", "my bank PIN? It's [REDACTED:pin]."),
        ("my gym locker combo, it's 12-30-8.", "my gym locker combo, it's [REDACTED:combination]."),
        ("my password for the router? admin123", "my password for the router? [REDACTED:password]"),
        ("My Netflix password is the same as my email one: Sunflower88",
         "My Netflix password is the same as my email one: [REDACTED:password]"),
        ("security question answer: Mr. Whiskers", "security question answer: [REDACTED:security_answer]"),
        ('the master password is "purple elephant dance"', 'the master password is "[REDACTED:password]"'),
        ("my PIN so I'll write it here: 9021", "my PIN so I'll write it here: [REDACTED:pin]"),
        ("The old password was ilovedogs and the new one is ilovecats2!",
         "The old password was [REDACTED:password] and the new one is [REDACTED:password]!"),
        ("my bank account is 123456789 at Chase", "my bank account is [REDACTED:bank_account] at Chase"),
        ("my SSN, in case you need it for the form: 512-44-9087", "my SSN, in case you need it for the form: [REDACTED:ssn]"),
        # a note's list of accounts and codes
        ("- Router admin: admin / R0uter!2024", "- Router admin: admin / [REDACTED:password]"),
        ("- Front door (new lock): 8812 (changed in May)", "- Front door (new lock): [REDACTED:access_code] (changed in May)"),
        ("- Safe: 12-34-56", "- Safe: [REDACTED:combination]"),
        ("- Bank PIN - 4471", "- Bank PIN - [REDACTED:pin]"),
        ("The code to get into the building is #4417", "The code to get into the building is #[REDACTED:access_code]"),
        ("the combo for the bike is 1 2 3 4", "the combo for the bike is [REDACTED:combination]"),
        ('ssh-rsa key passphrase is "my dog ate my homework"', 'ssh-rsa key passphrase is "[REDACTED:password]"'),
        ("The shared drive password is 'Q3-Planning!' for the team", "The shared drive password is '[REDACTED:password]' for the team"),
        ("the password is Fl0werP0t not Fl0werPot", "the password is [REDACTED:password] not [REDACTED:password]"),
        ("my old locker code was 1122 but they changed it to 3344",
         "my old locker code was [REDACTED:access_code] but they changed it to [REDACTED:access_code]"),
        ('my bank\'s security word is "pineapple"', 'my bank\'s security word is "[REDACTED:security_answer]"'),
        ("my voicemail pin's 8080", "my voicemail pin's [REDACTED:pin]"),
        ("I log in with admin and Netgear#55", "I log in with admin and [REDACTED:password]"),
        ("the admin password, which I set up last year when we moved in, is Archer!2023. Can you help?",
         "the admin password, which I set up last year when we moved in, is [REDACTED:password]. Can you help?"),
        ("Remind me: locker 114, combination 8-22-31.", "Remind me: locker 114, combination [REDACTED:combination]."),
        ("For the conference wifi use guest / Welcome2024!", "For the conference wifi use guest / [REDACTED:password]!"),
        ("I wrote my PIN (6612) on the back of the card", "I wrote my PIN ([REDACTED:pin]) on the back of the card"),
        ("Can you remember this for me: Hulu - mark@me.com - Popcorn!42",
         "Can you remember this for me: Hulu - mark@me.com - [REDACTED:password]"),
        ("the safe code at the hotel room is 0-4-1-9", "the safe code at the hotel room is [REDACTED:access_code]"),
        # the answer to a security question recovers an account as a password does
        ("The answer to my security question is Fluffy", "The answer to my security question is [REDACTED:security_answer]"),
        ("security answer: 'blue whale'", "security answer: '[REDACTED:security_answer]'"),
        ("my secret answer for the bank is Springfield", "my secret answer for the bank is [REDACTED:security_answer]"),
        ("my employee ID is 44821 and badge PIN 9087", "my employee ID is 44821 and badge PIN [REDACTED:pin]"),
        # identity, health, insurance and tax numbers named as such
        ("My driver's license number is D1234-5678-9012", "My driver's license number is [REDACTED:driving_licence]"),
        ("my NHS number is 943 476 5919", "my NHS number is [REDACTED:national_id]"),
        ("my tax ID (SIN) is 046 454 286", "my tax ID (SIN) is [REDACTED:national_id]"),
        ("National Insurance number: QQ 12 34 56 C", "National Insurance number: [REDACTED:national_id]"),
        ("Medicare number 1EG4-TE5-MK73", "Medicare number [REDACTED:national_id]"),
        ("My SIN: 046-454-286", "My SIN: [REDACTED:national_id]"),
        ("the security code on the back is 123", "the security code on the back is [REDACTED:card_code]"),
        # a door's code named in the language of the house
        ("Le code de la porte est 4821", "Le code de la porte est [REDACTED:access_code]"),
        ("el código de la puerta principal es 4821.", "el código de la puerta principal es [REDACTED:access_code]."),
        ("Der Türcode lautet 4821", "Der Türcode lautet [REDACTED:access_code]"),
        ("Il codice dell'allarme è 4821", "Il codice dell'allarme è [REDACTED:access_code]"),
        # a passcode named with no verb; a compound whose head is a password word
        ("Meeting ID 845 2231 9981 Passcode 774411", "Meeting ID 845 2231 9981 Passcode [REDACTED:pin]"),
        ("my SSH key passphrase is blue-falcon-88", "my SSH key passphrase is [REDACTED:password]"),
        ("app-specific password abcd-efgh-ijkl-mnop for Mail", "app-specific password [REDACTED:password] for Mail"),
        # a change that names the new password by a pronoun, in the word's sentence or the next
        ("My bank password expired so I changed it to Marigold77! yesterday",
         "My bank password expired so I changed it to [REDACTED:password]! yesterday"),
        ("What is the wifi password? I changed it to Bluebird2024.", "What is the wifi password? I changed it to [REDACTED:password]."),
        # a UUID named a token with no verb (Heroku's API keys are UUIDs)
        ("heroku auth token 50c4ef33-cca4-7a7b-2320-beb7e0e8a5b2", "heroku auth token [REDACTED:secret]"),
        # a cookie header's values, whatever their names
        ("Cookie: theme=dark; sessionid=8f3kQ9zPx2LmN7vB4cT1", "Cookie: theme=dark; sessionid=[REDACTED:session_cookie]"),
        ("Set-Cookie: id=a3fWa9Kz81LmQp2Rt7Vx; Expires=Thu, 21 Oct 2021 07:28:00 GMT; Secure",
         "Set-Cookie: id=[REDACTED:session_cookie]; Expires=Thu, 21 Oct 2021 07:28:00 GMT; Secure"),
        # a password given to a command
        ("htpasswd -b .htpasswd bob Bobpass123", "htpasswd -b .htpasswd bob [REDACTED:password]"),
        ("htpasswd -nb alice S3cretPw!", "htpasswd -nb alice [REDACTED:password]"),
        ("net user jdoe Winter2025 /domain", "net user jdoe [REDACTED:password] /domain"),
        ('echo "hunter22" | sudo -S apt update', 'echo "[REDACTED:password]" | sudo -S apt update'),
        # a password given to log in with, and no credential word; a code named with words between
        ("use Tr1ckyPass! to log in to the router", "use [REDACTED:password] to log in to the router"),
        ("login for the portal: jdoe, Spring#2025", "login for the portal: jdoe, [REDACTED:password]"),
        ("log in as admin with Xk9#mP2qL", "log in as admin with [REDACTED:password]"),
        ("you can sign in with Summer2024! now", "you can sign in with [REDACTED:password] now"),
        ("log in to the NAS with nasAdmin#2023.", "log in to the NAS with [REDACTED:password]."),
        ("the alarm panel master code is 9921#", "the alarm panel master code is [REDACTED:access_code]#"),
    ],
)
def test_numbers_named_for_what_they_open_and_passwords_given_other_ways(text, scrubbed):
    assert scrub_secrets(text).text == scrubbed


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("my password is sunshine", "my password is [REDACTED:password]"),
        ("My wifi password is bluebird.", "My wifi password is [REDACTED:password]."),
        ("Password: popcorn", "Password: [REDACTED:password]"),
        ("The password for the garage is pudding and it works", "The password for the garage is [REDACTED:password] and it works"),
        ("the password was changed to Baseball, don't tell", "the password was changed to [REDACTED:password], don't tell"),
        ('{"role": "user", "content": "my password is dragon"}', '{"role": "user", "content": "my password is [REDACTED:password]"}'),
        # after its user or e-mail address, ending the pair
        ("Netflix: jane@x.com / popcorn", "Netflix: jane@x.com / [REDACTED:password]"),
        ("- Wi-Fi: HomeNet / bluebird", "- Wi-Fi: HomeNet / [REDACTED:password]"),
        # a word no dictionary holds, in a sentence, a setting or a default login
        ("the password is letmein.", "the password is [REDACTED:password]."),
        ("db_password: changeme", "db_password: [REDACTED:password]"),
        ("Router login: admin / admin", "Router login: admin / [REDACTED:password]"),
        # "pass" or "pw" after a user's field
        ("user: admin pass: admin", "user: admin pass: [REDACTED:password]"),
        ("login: jdoe, pw: sunshine.", "login: jdoe, pw: [REDACTED:password]."),
        # a wireless network's key is its password
        ("the wifi key is sunshine", "the wifi key is [REDACTED:password]"),
        ("the wifi key is Bluebird2024", "the wifi key is [REDACTED:password]"),
        # ... named earlier in the sentence, and of more digits than a PIN
        ("our wifi is HomeNet and the key is Bluebird2024", "our wifi is HomeNet and the key is [REDACTED:password]"),
        ("my wifi network is TP-Link_5G and the key is 8812345678",
         "my wifi network is TP-Link_5G and the key is [REDACTED:password]"),
        # a mother's maiden name answers the question banks ask
        ("Mom's maiden name: O'Brien", "Mom's maiden name: [REDACTED:security_answer]"),
        ("security answer: it's 'blue whale'", "security answer: it's '[REDACTED:security_answer]'"),
    ],
)
def test_a_plain_word_handed_over_as_a_password(text, scrubbed):
    assert scrub_secrets(text).text == scrubbed


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("export DB_PASSWORD=sunshine", "export DB_PASSWORD=[REDACTED:password]"),
        ("db_password: dragon\nuser: app", "db_password: [REDACTED:password]\nuser: app"),
        ('{"user": "x", "password": "popcorn"}', '{"user": "x", "password": "[REDACTED:password]"}'),
        ("  - adminPassword: bluebird", "  - adminPassword: [REDACTED:password]"),
        ("password=abc1", "password=[REDACTED:password]"),
        # the "=" stays outside the placeholder
        ("use password=abc123 to log in", "use password=[REDACTED:password] to log in"),
    ],
)
def test_a_setting_s_short_or_plain_password(text, scrubbed):
    assert scrub_secrets(text).text == scrubbed


def test_the_word_index_is_read_by_the_model_s_own_names():
    from spacy.strings import get_string_id

    from memory_pipeline.text.secrets.lexicon import POS_IDS, only_a_noun

    assert POS_IDS == {pos: get_string_id(pos) for pos in POS_IDS}
    assert [only_a_noun(w) for w in ("sunshine", "weak", "reset", "meeting", "there", "qwerty")] == [True] + [False] * 5


def test_without_the_word_index_no_word_is_taken_for_a_made_up_one(monkeypatch):
    from memory_pipeline.text.secrets import lexicon

    assert lexicon.made_up("qwerty") and not lexicon.made_up("weak")
    monkeypatch.setattr(lexicon, "_any_form", lambda: (frozenset(), ()))
    assert not lexicon.made_up("qwerty") and not lexicon.made_up("weak")


@pytest.mark.parametrize(
    "text",
    [
        # words that describe a password, made of known words, or whose it is, stay
        "the password is hardcoded", "my password is unset", "the password is plaintext.", "the password is yours",
        "the password is autogenerated", "the password is lastpass", "the password is unguessable",
        "my wifi key is weak", "the API key is sunshine", "the wifi key is on the fridge",
        "her mother's maiden name was the same as mine", "The password is this.", "password: xxxx",
        "the sin is 046 454 286", "SIN 2024 list", "user: admin pass: n/a", "user: alice passes: 3",
        # what one logs in with that is no password; a code of a kind no lock opens
        "Sign in with Google to continue", "log in with Office365 credentials", "sign in with YubiKey5C",
        "Try logging in with jsmith@example.com", "I logged in using my laptop at 9pm", "unlock it with 4471",
        "the building permit code 2021 applies",
        "the wifi was down so the key is to restart the router", "the password is 20 characters long",
        "Does it support the latest WiFi standard, 802.11ax?", "login: jdoe, then click Submit",
        # an adverb before a word that describes; two words run together that describe; a regulation's
        # year; a chip's pin
        "my password is still weak", "the password is just reset", "the password is now lowercase",
        "the building code (2021) requires railings", "the building code in force was 2018",
        "the pin 1234 on the header is ground",
        # counts and dates near a lock's or a code's name; "account" after a routing table
        "the gate opens with 1500 people inside", "the routing table has an account 12 entries",
        "the PIN is required, 2024 rules apply", "the keypad is 3 feet high", "the door code is 2021-10-01",
        "the access code I wrote was 1500 lines", "la clave del éxito es 2024", "le code c'est 2024 la norme",
        "bus pass for May: Monthly2024",
        # a question about the password answered with a word that describes it; an aside that is no value
        "the password? It's weak.", "Is that the password? Nope, it's wrong",
        "the password, however, is long", "my password, Fluffy, is weak",
        # sixteen digits that fail the check digit and name no card; a website's security code
        "order 4532 7153 3790 4617 shipped", "the security code 4821 was sent by text",
    ],
)
def test_words_that_describe_a_password_stay(text):
    assert scrub_secrets(text).text == text


def test_a_password_named_without_a_verb_is_redacted_when_it_looks_chosen():
    result = scrub_secrets("login with user admin and password Adm1nU5L7e, then restart")
    assert result.text == "login with user admin and password [REDACTED:password], then restart"



@pytest.mark.parametrize("seed", [4, 5])
def test_every_format_is_redacted_inside_a_json_transcript_line(seed):
    for entry in corpus(seed):
        line = json.dumps({"role": "user", "content": f"Alice here. {entry.line}", "ts": "2026-11-03T09:00:00Z"})
        scrubbed = scrub_secrets(line).text
        assert json.loads(scrubbed)["role"] == "user", entry.name  # still one valid JSON line
        for secret in entry.secrets:
            for part in secret.split("\n"):
                assert part not in scrubbed and json.dumps(part)[1:-1] not in scrubbed, entry.name


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("mein Passwort für den Staging-Server lautet Xk29!fjqPz8w", "mein Passwort für den Staging-Server lautet [REDACTED:password]"),
        ("我的数据库密码是Xk29!fjqPz8w", "我的数据库密码是[REDACTED:password]"),
        # a quoted password is taken whole, its last character too
        ('I\'ve stored "Gr8Summer!" as your Netflix password.', 'I\'ve stored "[REDACTED:password]" as your Netflix password.'),
        ("Das Datenbankpasswort: Xk29!fjqPz8w.", "Das Datenbankpasswort: [REDACTED:password]."),
        ("the loader password hunter2 works", "the loader password [REDACTED:password] works"),
        ("db.internal:5432:app:app_user:Xk29!fjqPz8w", "db.internal:5432:app:app_user:[REDACTED:password]"),
        ('variable "db_password" {\n  type    = string\n  default = "Xk29!fjqPz8w"\n}',
         'variable "db_password" {\n  type    = string\n  default = "[REDACTED:password]"\n}'),
        ("- name: DB_PASSWORD\n  value: Xk29!fjqPz8w", "- name: DB_PASSWORD\n  value: [REDACTED:password]"),
        ('variable "db_password" { default = var.from_vault }', 'variable "db_password" { default = var.from_vault }'),
        ("- name: DB_USER\n  value: app\n- name: DB_PASSWORD\n  valueFrom: vault", "- name: DB_USER\n  value: app\n- name: DB_PASSWORD\n  valueFrom: vault"),
        ("meeting 10:30:00:15 and 2026:11:26:08:41", "meeting 10:30:00:15 and 2026:11:26:08:41"),
        ("docker login -u ci -p Xk29!fjqPz8w ghcr.io", "docker login -u ci -p [REDACTED:password] ghcr.io"),
        ("keytool -list -storepass Xk29!fjqPz8w", "keytool -list -storepass [REDACTED:password]"),
        ("requirepass Xk29!fjqPz8w", "requirepass [REDACTED:password]"),
        ('ConvertTo-SecureString "Xk29!fjqPz8w" -AsPlainText', 'ConvertTo-SecureString "[REDACTED:password]" -AsPlainText'),
        ("my bank card PIN is 482193", "my bank card PIN is [REDACTED:pin]"),
        ("private key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318 offline", "private key [REDACTED:secret] offline"),
        ("the key commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 landed", "the key commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 landed"),
        ("pinned 4 items; the pin is 3 cm long; shopping 2024", "pinned 4 items; the pin is 3 cm long; shopping 2024"),
        ("| host | user | password |\n|---|---|---|\n| db | app | Xk29!fjqPz8w |\n\nAfter, the table | ends |",
         "| host | user | password |\n|---|---|---|\n| db | app | [REDACTED:password] |\n\nAfter, the table | ends |"),
        ("user,password,role\nadmin,Xk29!fjqPz8w,owner", "user,password,role\nadmin,[REDACTED:password],owner"),
        ("I changed my password, then logged in\nsee you, bye", "I changed my password, then logged in\nsee you, bye"),
        ("| key | meaning |\n|---|---|\n| Ctrl+K | search |", "| key | meaning |\n|---|---|\n| Ctrl+K | search |"),
    ],
)
def test_prose_in_any_script_and_configuration_formats(text, scrubbed):
    assert scrub_secrets(text).text == scrubbed


def test_a_token_of_any_length_is_redacted_whole():
    token = "FwoGZXIvYXdzE" + "Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z" * 20
    for line in (f"aws_session_token = {token}", f"the session token {token}. Next", f"cookie {token}"):
        result = scrub_secrets(line)
        assert token[-40:] not in result.text and sum(result.counts.values()) == 1, line


def test_base64_that_wraps_a_credential_is_still_one():
    inner = json.dumps({"auths": {"ghcr.io": {"auth": "Y2k6RmFsY29uNDIhQWJjZGVm"}}, "token": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9v"})
    blob = base64.b64encode(inner.encode()).decode()
    assert scrub_secrets(f"config {blob}") == ScrubResult("config [REDACTED:high_entropy_token]", {"high_entropy_token": 1})


# Runs of what the rules for named values, pairs and phrases read, each as long as a line may be:
# a pattern that could read one of them in many ways (two codes glued with no separator between
# them) took minutes on the first 174 characters.
HOSTILE = {
    "codes glued": "backup codes " + "a1b2" * 40 + "_",
    "codes listed": "backup codes " + "a1b2c3d4e5 " * 200 + "_x",
    "combination digits": "lock combination is " + "1 " * 500 + "x",
    "account digits": "account number " + "1 " * 500 + "x",
    "login run": "login " + "a" * 5000 + ":" + "b" * 5000,
    "address run": "a" * 3000 + "@" + "b." * 2000 + "c",
    "named after": "'" + "x" * 190 + "' as " + "my " * 300 + "password",
    "list words": " ".join(["abandon"] * 3000) + " zzz",
    "numbered words": " - ".join(["abandon", "1."] * 2000),
    "changes": "password " + "was changed from " * 300 + "x",
    "what a PIN opens": "PIN for " + "the " * 2000 + "is 1234",
    "questions": "password? " * 1000,
    "a code's door abroad": "código de la " + "puerta " * 2000 + "es x",
    "plain words handed over": "password: sunshine " * 500,
    "security answers": "answer to my security question is " * 1000 + "x",
    "national ids": "NHS number is " + "A1 " * 3000 + "- " + "tax ID (" * 500,
    "document numbers": "passport number " + "A1-" * 3000,
    "logins": "log in to the " * 2000 + "with Xk9#mP2qL use " * 1000,
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("line", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_runs_scrub_in_linear_time(line):
    assert growth(scrub_secrets, lambda copies: (line + "\n") * copies, 2) < 8


@pytest.mark.timeout(120)
@pytest.mark.parametrize("unit", ["user: a pass: b ", "password: sunshine ", "user=x pw=y, "])
def test_many_settings_on_one_line_scrub_in_linear_time(unit):
    # (each password word looked back to its line's start: 6 s for 8,000 on one line)
    assert growth(scrub_secrets, lambda copies: unit * copies, 500) < 8


@pytest.mark.parametrize(
    ("asked", "reply", "scrubbed"),
    [
        ("Happy to help. What is the wifi password?", "It's BlueSky2024!", "It's [REDACTED:password]!"),
        ("Could you send me the staging API key:", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "[REDACTED:secret]"),
        ("Quel est le mot de passe\u00a0?", "C\u2019est Chaton2021!", "C\u2019est [REDACTED:password]!"),
        # a plain word as the whole answer to what the password is
        ("Remind me of the wifi password?", "It's bluebird.", "It's [REDACTED:password]."),
        ("What is the password?", "popcorn", "[REDACTED:password]"),
        # a question that does not end on the credential word, or a reply that holds no value
        ("Did you change the password?", "Tuesday.", "Tuesday."),
        ("What is the wifi password?", "On the fridge.", "On the fridge."),
        ("Do you use a password manager?", "Yes, Bitwarden2 on every device", "Yes, Bitwarden2 on every device"),
        ("What is the wifi password?", "I forgot it, sorry. Windows11 might know.", "I forgot it, sorry. Windows11 might know."),
        ("How was the trip?", "Great, Lisbon2024 was fun", "Great, Lisbon2024 was fun"),
    ],
)
def test_a_value_given_alone_after_a_question_for_it(asked, reply, scrubbed):
    """A chat's turn answering the one before ("What is the wifi password?" / "It's X"): read
    field by field when a transcript is parsed, and line after line in its raw JSON lines (what
    ``get`` shows), with the same result."""
    assert scrub_secrets(reply, after=asked).text == scrubbed
    lines = [json.dumps({"role": "assistant", "content": asked}), json.dumps({"role": "user", "content": reply, "ts": "t"}),
             json.dumps({"role": "assistant", "content": "Noted."})]
    raw = scrub_secrets("\n".join(lines)).text
    assert [json.loads(line)["content"] for line in raw.split("\n")] == [asked, scrubbed, "Noted."]
    assert scrub_secrets(raw).text == raw  # idempotent
    parsed = parse_transcript("\n".join(lines) + "\n")
    assert [t.content for t in parsed.turns] == [asked, scrubbed, "Noted."]
