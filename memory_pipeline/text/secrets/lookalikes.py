"""Long runs that look random to an entropy measure but are not credentials.

``random_token`` asks ``not_a_secret`` before it redacts a run:

- base64 of plain data: decoded, it is JSON, prose or a known file format (an inline image, a
  gzip or PDF file). The decoded text is scrubbed in turn, so a blob that wraps a credential
  (a Docker ``config.json``, a JSON service-account key) is still one;
- content ids: an IPFS CID (v0 ``Qm`` + 44 base58, v1 in base58btc), a Bitcoin address;
- a hash in a lock or checksum file, named by its prefix (``h1:`` in ``go.sum``; ``sha512-`` and
  ``sha256:`` are handled by ``random_token`` itself);
- a slug or path made of words ("FindTheParagon/paragon-papers-12-29-4a21382bb6e4",
  "/Downloads/flutter_macos_arm64_3.7.3-stable.zip"): most of its characters are words;
- a line inside a certificate or public key block, which is meant to be shared.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

_BASE58 = r"[1-9A-HJ-NP-Za-km-z]"
_CONTENT_ID_RE = re.compile(rf"Qm{_BASE58}{{44}}|z(?:b2rh|dj7W){_BASE58}{{40,}}|[13]{_BASE58}{{25,34}}")
_LOCK_PREFIX_RE = re.compile(r"(?:\bh1:|\bgo:|\bsha\d{1,3}[-:=]|\bmd5[-:=])\s*$", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Z]?[a-z]{2,}")
_VOWEL_RE = re.compile(r"[aeiouy]")
WORDY_SHARE = 0.5  # random base62 of 32+ characters: about 0.1-0.3 of it in vowel-holding words
_BINARY_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"\x1f\x8b", b"PK\x03\x04", b"RIFF", b"\x00\x00\x00")
_PUBLIC_BLOCK_RE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:CERTIFICATE|PUBLIC KEY)(?: BLOCK)?-----(?:[^-]++|-(?!----END ))*+(?:-----END|$)"
)


def public_block_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each certificate or public key block in ``text``."""
    if "-----BEGIN" not in text:
        return []
    return [m.span() for m in _PUBLIC_BLOCK_RE.finditer(text)]


def not_a_secret(text: str, start: int, end: int) -> bool:
    """True when text[start:end], a long high-entropy run, is structured data or a citation."""
    run = text[start:end]
    if _CONTENT_ID_RE.fullmatch(run) or _LOCK_PREFIX_RE.search(text, max(0, start - 8), start):
        return True
    if _wordy(run):
        return True
    return _encodes_plain_data(run)


def _wordy(run: str) -> bool:
    words = sum(len(w) for w in _WORD_RE.findall(run) if len(w) >= 3 and _VOWEL_RE.search(w.lower()))
    return words >= WORDY_SHARE * len(run)


def _encodes_plain_data(run: str) -> bool:
    """Base64 (standard or URL-safe) of JSON, prose or a file format, holding no secret itself."""
    body = run.rstrip("=")
    if len(body) < 16 or ("+" in body or "/" in body) and ("-" in body or "_" in body):
        return False
    altchars = b"-_" if ("-" in body or "_" in body) else None
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return False
    if data.startswith(_BINARY_MAGIC):
        return True
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if sum(c.isprintable() or c in "\n\r\t" for c in decoded) < 0.97 * len(decoded):
        return False
    if not (_is_json(decoded) or _is_prose(decoded)):
        return False
    from memory_pipeline.text.scrub import scrub_secrets  # the scrubber calls this module

    return not scrub_secrets(decoded).counts


def _is_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(stripped), dict | list)
    except ValueError:
        return False


def _is_prose(text: str) -> bool:
    words = text.split()
    return len(words) >= 3 and sum(c.isalpha() or c.isspace() for c in text) >= 0.8 * len(text)
