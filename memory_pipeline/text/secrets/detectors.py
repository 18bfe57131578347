"""detect-secrets' regex detectors, for the formats the families here do not spell out.

Each detector runs behind a cheap substring guard, and only over the text around runs of 20 or
more token characters that mix digits and letters: every format they know has one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memory_pipeline.text.secrets.families import PLACEHOLDER, spans_around

def _any_of(*needles: str) -> Callable[[str], bool]:
    return lambda lowered: any(needle in lowered for needle in needles)


_KEYWORDS = _any_of("key", "pw", "pass", "token")
_EVERYWHERE, _NEAR_KEYWORD = 0, 1

# detect-secrets' regex detectors for formats we do not spell out ourselves, each behind a cheap
# substring guard. Left out: GitHub, OpenAI, Slack, Stripe and npm (our own rules in
# ``text.scrub`` cover them, and the OpenAI and npm patterns backtrack quadratically on long runs),
# Artifactory (its "AP[0-9A-F]..." password form matches upper-case words), Basic Auth
# (``text.scrub`` keeps the user name), Public IP (not a secret), Private Key (matches only the
# BEGIN line), and the keyword and high-entropy scanners, which flag UUIDs, hashes and prose.
# The keyword-assignment detectors (Cloudant, IBM, SoftLayer) read only the spans that hold a
# keyword, the others every span.
_DETECTORS: tuple[tuple[RegexBasedDetector, int, Callable[[str], bool]], ...] = (
    (AWSKeyDetector(), _EVERYWHERE, _any_of("akia", "asia", "abia", "acca", "a3t", "aws")),
    (AzureStorageKeyDetector(), _EVERYWHERE, _any_of("accountkey=")),
    (CloudantDetector(), _NEAR_KEYWORD, _any_of("cl")),
    (DiscordBotTokenDetector(), _EVERYWHERE, _any_of(".")),
    (GitLabTokenDetector(), _EVERYWHERE, _any_of("gl", "gr1348941")),
    (IbmCloudIamDetector(), _NEAR_KEYWORD, _KEYWORDS),
    (IbmCosHmacDetector(), _NEAR_KEYWORD, _any_of("secret")),
    (MailchimpDetector(), _EVERYWHERE, _any_of("-us")),
    (PypiTokenDetector(), _EVERYWHERE, _any_of("pypi-")),
    (SendGridDetector(), _EVERYWHERE, _any_of("sg.")),
    (SoftlayerDetector(), _NEAR_KEYWORD, _any_of("sl")),
    (SquareOAuthDetector(), _EVERYWHERE, _any_of("sq0csp-")),
    (TelegramBotTokenDetector(), _EVERYWHERE, _any_of(":")),
    (TwilioKeyDetector(), _EVERYWHERE, lambda low: True),
)
# Every format those detectors know has a run of 20+ token characters mixing digits and
# letters (prose, "=====" rules and hyphenated names have none), so they only read the text
# around such runs. A letters-only Cloudant key still meets the assignment rule of ``text.scrub``.
_LONG_RUN_RE = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{20,}")
_MIN_DETECTED_SECRET = 12
_DETECTOR_CONTEXT = 256
_DIGIT_RE = re.compile(r"\d")
_LETTER_RE = re.compile(r"[A-Za-z]")


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


def _mixes_digits_and_letters(match: re.Match[str]) -> bool:
    run = match.group(0)
    return _DIGIT_RE.search(run) is not None and _LETTER_RE.search(run) is not None


def apply_detect_secrets(text: str, counts: Counter[str]) -> str:
    spans = spans_around(
        text, _LONG_RUN_RE, _DETECTOR_CONTEXT, _DETECTOR_CONTEXT, _mixes_digits_and_letters
    )
    if not spans:
        return text
    # One pass of each detector over all candidate spans at once (they are cut at line ends and
    # joined by line breaks, which none of these patterns crosses).
    pieces = [text[start:end] for start, end in spans]
    lowered_pieces = [piece.lower() for piece in pieces]
    keyed = [i for i, low in enumerate(lowered_pieces) if _KEYWORDS(low)]
    candidates = (
        "\n".join(pieces),
        "\n".join(pieces[i] for i in keyed),
    )
    lowered = ("\n".join(lowered_pieces), "\n".join(lowered_pieces[i] for i in keyed))
    found: dict[str, str] = {}
    for detector, reach, worth_running in _DETECTORS:
        if not worth_running(lowered[reach]):
            continue
        for secret in detector.analyze_string(candidates[reach]):
            secret = secret.strip()
            if len(secret) >= _MIN_DETECTED_SECRET and "REDACTED" not in secret:
                found.setdefault(secret, _slug(detector.secret_type))
    # Longest first, so that a secret containing another is replaced whole.
    for secret in sorted(found, key=len, reverse=True):
        occurrences = text.count(secret)
        if occurrences:
            counts[found[secret]] += occurrences
            text = text.replace(secret, PLACEHOLDER.format(found[secret]))
    return text
