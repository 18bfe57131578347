"""Reading a query without a model: meaningful words, named people, *when* questions and the
period a query names (absolute dates, months, years, and phrases relative to ``now``), and the
topic of a request for advice.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory_pipeline.recall.query import (
    Period,
    asked_role,
    meaningful_words,
    named_people,
    query_period,
    reference_time,
    understand,
)

NOW = date(2026, 11, 22)


def test_meaningful_words_drop_stopwords_and_possessives():
    assert meaningful_words("What is Alice's API rate limit, please?") == ["alice", "api", "rate", "limit"]
    assert meaningful_words("ok, thanks!") == []


def test_named_people_skip_question_words_months_and_acronyms():
    assert named_people("When did Melanie go camping with Caroline in June?") == ["Melanie", "Caroline"]
    assert named_people("What did the LGBTQ group discuss?") == []
    assert named_people("Did Jon's bakery open?") == ["Jon"]


def test_named_people_keep_a_name_ending_in_s_and_take_no_contraction_for_one():
    assert named_people("Where did Chris's sister and Jess's dog go?") == ["Chris", "Jess"]
    assert named_people("I've been feeling nostalgic lately. I'm sure I'd go.") == []


@pytest.mark.parametrize(
    "question, asks",
    [("When did Bob move?", True), ("What year did the plan start?", True), ("How long ago was it?", True),
     ("What did Bob say about moving?", False)],
)
def test_when_questions(question, asks):
    assert understand(question, NOW).asks_when is asks


@pytest.mark.parametrize(
    "text, period",
    [
        ("What happened on 7 July, 2023?", Period(date(2023, 7, 7), date(2023, 7, 7), grace_days=7)),
        ("What happened on August 3, 2023?", Period(date(2023, 8, 3), date(2023, 8, 3), grace_days=7)),
        ("the outage of 2026-11-04", Period(date(2026, 11, 4), date(2026, 11, 4), grace_days=7)),
        ("What did John do in June 2023?", Period(date(2023, 6, 1), date(2023, 6, 30))),
        ("Where did they travel in 2022?", Period(date(2022, 1, 1), date(2022, 12, 31))),
        ("What did we decide in March?", Period(month=3)),
        ("What did I say yesterday?", Period(date(2026, 11, 21), date(2026, 11, 21))),
        ("What broke last month?", Period(date(2026, 10, 1), date(2026, 10, 31))),
        # NOW is a Sunday: last Friday was two days ago, told that day or since.
        ("Which artist did I start on last Friday?", Period(date(2026, 11, 20), date(2026, 11, 20), grace_days=2)),
        ("What did we cook last Sunday?", Period(date(2026, 11, 15), date(2026, 11, 15), grace_days=7)),
        ("What may happen next?", None),
        ("Which plan do I have?", None),
    ],
)
def test_query_periods(text, period):
    assert query_period(text, NOW) == period


def test_a_period_matches_days_told_shortly_after_a_named_day():
    day = query_period("on 7 July, 2023", NOW)
    assert day.contains(date(2023, 7, 7)) and day.contains(date(2023, 7, 12))
    assert not day.contains(date(2023, 7, 6)) and not day.contains(date(2023, 7, 20))
    assert Period(month=3).contains(date(2019, 3, 9)) and not Period(month=3).contains(None)


@pytest.mark.parametrize(
    "value, moment",
    [
        ("2023/05/30 (Tue) 18:40", datetime(2023, 5, 30, 18, 40, tzinfo=UTC)),
        ("2023/05/30", datetime(2023, 5, 30, tzinfo=UTC)),
        ("2023-05-30", datetime(2023, 5, 30, tzinfo=UTC)),
        ("2023-05-30T18:40:00Z", datetime(2023, 5, 30, 18, 40, tzinfo=UTC)),
        ("2023-05-30T18:40+02:00", datetime(2023, 5, 30, 16, 40, tzinfo=UTC)),
        (date(2023, 5, 30), datetime(2023, 5, 30, tzinfo=UTC)),
    ],
)
def test_reference_times_read_as_aware_moments(value, moment):
    got = reference_time(value)
    assert got == moment and got.tzinfo is not None


@pytest.mark.parametrize("value", ["the day after", "2023/13/01", "30.05.2023", ""])
def test_a_reference_time_that_is_no_date_is_refused_in_one_line(value):
    with pytest.raises(ValueError, match=r"is not a date: use ISO-8601"):
        reference_time(value)


def test_the_reference_time_is_the_now_of_relative_periods():
    asked = reference_time("2023/05/30 (Tue) 18:40").date()
    assert understand("What certification did I complete last month?", asked).period == Period(
        date(2023, 4, 1), date(2023, 4, 30)
    )


@pytest.mark.parametrize(
    "question, role",
    [
        ("What was the name of that hiking trail you recommended?", "assistant"),
        ("Can you remind me what was the chord progression in the second song?", "assistant"),
        ("I was going through our previous conversation about fashion brands.", "assistant"),
        ("Can you recommend some conferences that I might find interesting?", "user"),
        ("What book am I currently reading?", "user"),
        ("What did Caroline paint last week?", None),
    ],
)
def test_the_chat_role_a_question_is_about(question, role):
    assert asked_role(question) == role
    assert understand(question, NOW).asks_role == role


@pytest.mark.parametrize(
    "question, topic",
    [
        ("Could you please recommend a few podcasts about sailing?", "podcasts about sailing?"),
        ("We're hosting my in-laws on Sunday. Any ideas for a vegetarian lunch?",
         "We're hosting my in-laws on Sunday. a vegetarian lunch?"),
        ("Do you think it would be a good idea to learn Rust this winter?", "learn Rust this winter?"),
        ("Do you have any advice on repotting orchids?", "repotting orchids?"),
        # No frame, or too little left without it: the question as it is.
        ("What did I name my sourdough starter?", "What did I name my sourdough starter?"),
        ("Any tips?", "Any tips?"),
        # What the assistant said is matched in its own words.
        ("Can you give me the name of the trail you recommended?", "Can you give me the name of the trail you recommended?"),
    ],
)
def test_a_request_for_advice_is_matched_by_its_topic(question, topic):
    info = understand(question, NOW)
    assert info.topic == topic and info.text == question
    assert info.words == tuple(meaningful_words(topic))
    assert understand(question, NOW, request_frame=True).topic == question
