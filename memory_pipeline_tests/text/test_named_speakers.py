"""Proves: typed memories are read from every named speaker of a transcript (not only a ``user``
role), stored in the third person with the subject named and recorded in the reasoning; a
greeting or a compliment holds none, and "don't forget to stay positive" (no actor) is no todo.
Real spaCy: the statements come from its parse."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from memory_pipeline.text.memory_types import extract, transcript_passages
from memory_pipeline.text.turns import Turn

TS = datetime(2023, 3, 2, 10, 0, tzinfo=UTC)
TALK = [
    ("Gina", "Hey Jon! You're amazing!"),
    ("Jon", "I prefer contemporary dance. I'm opening a studio in Boston on Monday."),
    ("Gina", "Don't forget to stay positive."),
]


def test_named_speakers_give_attributed_third_person_memories(nlp):
    turns = [Turn(n + 1, role, text, TS, f"D1:{n + 1}") for n, (role, text) in enumerate(TALK)]
    memories = extract(transcript_passages(turns, "locomo/sessions/conv-1/s1.jsonl", "conv-1", nlp), ZoneInfo("UTC"), nlp)
    assert [(m.memory_type, m.content, m.source_ref) for m in memories] == [
        ("preference", "Jon prefers contemporary dance.", "locomo/sessions/conv-1/s1.jsonl#L2"),
        ("event", "Jon is opening a studio in Boston on Monday.", "locomo/sessions/conv-1/s1.jsonl#L2"),
    ]
    assert all("about Jon" in m.reasoning for m in memories)


def test_a_user_known_by_an_id_is_named_by_it_once(nlp):
    turns = [Turn(1, "user", "I prefer short answers about my data science courses.", TS, "S1:1")]
    memories = extract(transcript_passages(turns, "bot/sessions/d6233ab6/s1.jsonl", "d6233ab6", nlp), ZoneInfo("UTC"), nlp)
    assert [m.content for m in memories] == ["d6233ab6 prefers short answers about their data science courses."]


def test_a_liking_that_names_nothing_is_no_memory(nlp):
    """ "Yeah, I love to." and "I love how uncomplicated it is." name nothing to look up later; a
    liking of an activity ("I love performing", "I like to swim") does."""
    talk = ["Yeah, I love to.", "We love it, it brings us closer!", "I love how uncomplicated it is.",
            "Yeah, that's why I love performing!", "I like to swim."]
    turns = [Turn(n + 1, "Jon", text, TS, f"D1:{n + 1}") for n, text in enumerate(talk)]
    memories = extract(transcript_passages(turns, "locomo/sessions/conv-1/s1.jsonl", "conv-1", nlp), ZoneInfo("UTC"), nlp)
    assert [m.content for m in memories] == ["That's why Jon loves performing!", "Jon likes to swim."]
