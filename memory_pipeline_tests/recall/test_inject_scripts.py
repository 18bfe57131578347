"""Proves: auto-inject's trivial-message filter counts words in any script.

A message in Chinese, Japanese, Arabic, Russian or Korean is a question like any other: it must
reach recall when it says enough (it used to count 0 meaningful words and inject nothing). Short
greetings in those scripts, emoji-only messages and English stopword chatter stay trivial.
"""

from __future__ import annotations

import pytest

from memory_pipeline.recall.inject import is_trivial, meaningful_word_count

MEANINGFUL = [
    "我下周要去北京出差",  # I travel to Beijing for work next week
    "来週の東京出張のホテルを予約して",  # book the hotel for next week's Tokyo trip
    "أريد أن أحجز رحلة إلى دبي",  # I want to book a trip to Dubai
    "Где мой заказ номер",  # where is my order number
    "내일 회의 일정 알려줘",  # tell me tomorrow's meeting schedule
    "café crème brûlée",
    "What did Caroline paint last week?",
]
TRIVIAL = ["你好", "شكرا", "спасибо", "👍🎉🙏", "👍 👍 👍 😀", "ok thanks!", "ありがとう", "...", ""]


@pytest.mark.parametrize("message", MEANINGFUL)
def test_a_message_in_any_script_counts_its_words(message):
    assert meaningful_word_count(message) >= 3
    assert not is_trivial(message)


@pytest.mark.parametrize("message", TRIVIAL)
def test_greetings_and_emoji_stay_trivial(message):
    assert is_trivial(message)
