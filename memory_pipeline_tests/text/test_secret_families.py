"""Proves: the scrubber catches credentials by family, not by a list of strings, and leaves
ordinary text alone.

Each of the 70+ formats of ``secret_corpus`` (vendor prefixes, labelled values in env, YAML,
JSON, TOML, XML, flags and connection strings, URL user information, prose in three languages,
PEM blocks, JWTs, random tokens, an AWS secret with no label beside its key id) is generated
afresh under several seeds, so a rule that only knows one generated value fails. The lookalikes
are what memory text is full of (hashes that cite content, ids the pipeline makes, paths, code,
inline images, prose about passwords and keys) and must come back unchanged.
"""

from __future__ import annotations

import pytest

from memory_pipeline.text.scrub import ScrubResult, scrub_secrets
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


def test_a_password_named_without_a_verb_is_redacted_when_it_looks_chosen():
    result = scrub_secrets("login with user admin and password Adm1nU5L7e, then restart")
    assert result.text == "login with user admin and password [REDACTED:password], then restart"

