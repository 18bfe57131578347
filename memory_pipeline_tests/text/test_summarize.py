"""Extractive summaries: the compaction summary wins when present, the abstract is one sentence of
about 200 characters, key topics are proper-noun phrases, not sentence openers, and a summary is
in the third person ("we" and "our" included) without courtesies ("That's all for today, thanks!"),
and a chat with an assistant keeps what its user said beside the assistant's long answers."""

from datetime import UTC, datetime

from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.text.summarize import key_topics, shorten, summarize_turns
from memory_pipeline.text.turns import Turn
from memory_pipeline_tests.helpers import SAMPLE_ROOT


def sample(name: str):
    return parse_transcript((SAMPLE_ROOT / "support-bot/sessions/alice" / name).read_text())


def test_extractive_summary_of_a_session():
    t = sample("sess-20261030-tw02.jsonl")
    s = summarize_turns(t.turns, t.compactions)
    assert s.produced_by == "extractive"
    assert "PostgreSQL 16" in s.summary
    assert 40 <= len(s.l0_abstract) <= 201 and "\n" not in s.l0_abstract
    assert "Dana Whitfield" in s.key_topics and "PostgreSQL 16" in s.key_topics


def test_compaction_summary_is_used_and_later_turns_appended():
    t = sample("sess-20261118-tw05.jsonl")
    s = summarize_turns(t.turns, t.compactions)
    assert s.produced_by == "compaction"
    assert s.summary.startswith(t.compactions[-1][1].split(".")[0])
    assert "Afterwards:" in s.summary
    assert s.l0_abstract.startswith("Alice (Tidewater Logistics")


def test_key_topics_skip_openers_dates_and_pleasantries():
    topics = key_topics([
        "Hey Caroline! Great to see you. Thanks.",
        "Ticket LUM-48213 is with Tier 2 until Tuesday. Rui Santos owns the loader, and Rui agrees.",
    ])
    assert "Caroline" in topics and "LUM-48213" in topics and "Rui Santos" in topics
    assert not {"Hey", "Great", "Thanks", "Tuesday", "Rui", "Ticket LUM-48213"} & set(topics)


def test_shorten_cuts_at_a_word():
    text = "word " * 100
    short = shorten(text, 50)
    assert len(short) <= 50 and short.endswith("…") and "  " not in short


def test_a_summary_leaves_out_courtesies_and_names_the_speaker_for_we():
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    first = [Turn(1, "user", "I live in Lisbon, near the castle. That's all for today, thanks!", at, "t1"),
             Turn(2, "assistant", "Noted, thanks for the context.", at, "t2")]
    later = [Turn(1, "user", "We finally got the keys to our place in Porto. The movers come on Friday.", at, "t1"),
             Turn(2, "assistant", "Congratulations! Want me to update your address?", at, "t2"),
             Turn(3, "user", "Yes please, and thanks!", at, "t3"),
             Turn(4, "user", "Our team relocated to Porto, so we sit near the river now. We love it.", at, "t4")]
    assert summarize_turns(first, (), "maria").summary == "Maria lives in Lisbon, near the castle."
    assert summarize_turns(later, (), "maria").summary == (
        "Maria and others finally got the keys to their place in Porto. "
        "Maria's team relocated to Porto, so they sit near the river now."
    )


def test_a_chat_with_an_assistant_keeps_what_the_user_said_beside_its_long_answers():
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    apps = [
        ("Runna", "adaptive plans, pace zones and weekly mileage targets"),
        ("Strava", "route planning, Beacon safety sharing and segment leaderboards"),
        ("TrainingPeaks", "structured workouts, TSS charts and coach-built marathon plans"),
        ("Garmin Coach", "free adaptive plans from Jeff Galloway, Greg McMillan and Amy Parkerson-Mitchell"),
        ("Nike Run Club", "guided runs with Coach Bennett and a 18-week marathon program"),
        ("Hal Higdon", "novice, intermediate and advanced marathon schedules since 1999"),
    ]
    advice = "\n".join(f"{i}. **{name}** (iOS, Android): {name} offers {what} for runners training for a "
                       "marathon in 2026." for i, (name, what) in enumerate(apps, 1))
    turns = [Turn(1, "user", "I'm training for the Berlin Marathon in September. My long run is 28 km on Sundays. "
                  "Which apps would help me?", at, "t1"),
             Turn(2, "assistant", advice, at, "t2"),
             Turn(3, "user", "Thanks! I already use Strava with my club, the Lisbon Road Runners.", at, "t3")]
    summary = summarize_turns(turns, (), "maria")
    # The user's own statements lead; the assistant's list has the rest of the room, not all of it.
    assert "Maria is training for the Berlin Marathon in September." in summary.summary
    assert "Maria already uses Strava with their club, the Lisbon Road Runners." in summary.summary
    assert "**Runna**" in summary.summary
    assert summary.l0_abstract.startswith("Maria")
