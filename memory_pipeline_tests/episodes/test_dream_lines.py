"""Proves: dreaming writes memory, not chat: dated third-person facts about a person (a sentence
whose subject is a thing, "This pic ...", is none), grouped by person; a favourite or a decision lands in its section; greetings, compliments and
questions are left out; a recurring pattern is restated with its new count by a later run
instead of repeated. Real spaCy for the lines (they come from its parse)."""

from datetime import UTC, datetime

from memory_pipeline.episodes.dream_lines import statement_lines
from memory_pipeline.episodes.dreaming import (
    DECISIONS,
    PATTERNS,
    PREFERENCES,
    PROJECT_FACTS,
    Line,
    parse_document,
    write_document,
)
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.statements import statements
from memory_pipeline.text.turns import Turn

EPISODE = {"session_id": "s1", "path": "locomo/sessions/conv-1/s1.jsonl", "start_line": 1, "end_line": 6}
TS = datetime(2023, 1, 20, 16, 4, tzinfo=UTC)


def test_lines_are_dated_third_person_and_in_their_sections(nlp):
    talk = [
        ("Gina", "Hey Jon! You're amazing!"),
        ("Jon", "I lost my job at the bank last week, so I opened a dance studio in Boston."),
        ("Gina", "What dance style do you like?"),
        ("Jon", "My favorite dance style is contemporary."),
        ("Gina", "I decided to sell my clothes online instead of renting a shop."),
        ("Jon", "Can't wait!"),
        ("Jon", "This pic of the studio is from last night in Boston - the opening party was a blast!"),
    ]
    turns = [Turn(n + 1, role, text, TS, f"D1:{n + 1}") for n, (role, text) in enumerate(talk)]
    lines = statement_lines(EPISODE, statements(turns, "conv-1", nlp))
    assert [(line.section, line.text, line.citation) for line in lines] == [
        (PREFERENCES, "Jon's favorite dance style is contemporary.", "[s1 · locomo/sessions/conv-1/s1.jsonl#L4]"),
        (DECISIONS, "Gina, 2023-01-20: Gina decided to sell their clothes online instead of renting a shop.",
         "[s1 · locomo/sessions/conv-1/s1.jsonl#L5]"),
        (PROJECT_FACTS, "Jon, 2023-01-20: Jon lost their job at the bank last week, so Jon opened a dance studio in Boston.",
         "[s1 · locomo/sessions/conv-1/s1.jsonl#L2]"),
    ]


def test_patterns_are_restated_and_facts_grouped_by_person(tmp_path):
    path, tenant, day = tmp_path / "dream.md", Tenant("locomo", "conv-1"), datetime(2023, 2, 1, tzinfo=UTC)
    cite = "[s1 · locomo/sessions/conv-1/s1.jsonl#L2]"
    write_document(path, tenant, day, [
        Line(PATTERNS, "Jon — dance studio: came up in 2 sessions (2023-01-20 to 2023-01-29)", cite),
        Line(PROJECT_FACTS, "Jon, 2023-01-20: Jon opened a dance studio.", cite),
        Line(PROJECT_FACTS, "Gina, 2023-01-20: Gina lost their job.", cite),
    ], "extractive")
    second = write_document(path, tenant, day, [
        Line(PATTERNS, "Jon — dance studio: came up in 3 sessions (2023-01-20 to 2023-02-01)", cite),
        Line(PROJECT_FACTS, "Jon, 2023-02-01: Jon hired two teachers.", cite),
    ], "extractive")
    sections = parse_document(path.read_text())
    assert sections[PATTERNS] == [f"- Jon — dance studio: came up in 3 sessions (2023-01-20 to 2023-02-01) {cite}"]
    assert sections[PROJECT_FACTS] == [
        f"- Jon, 2023-01-20: Jon opened a dance studio. {cite}",
        f"- Jon, 2023-02-01: Jon hired two teachers. {cite}",
        f"- Gina, 2023-01-20: Gina lost their job. {cite}",
    ]
    assert (second.lines_added, second.lines_total) == (1, 4)


def test_a_liking_that_names_nothing_is_no_preference_line(nlp):
    talk = [("Jon", "Yeah, I love to."), ("Jon", "I love how uncomplicated it is."), ("Jon", "I love performing on stage.")]
    turns = [Turn(n + 1, role, text, TS, f"D1:{n + 1}") for n, (role, text) in enumerate(talk)]
    lines = statement_lines(EPISODE, statements(turns, "conv-1", nlp))
    assert [(line.section, line.text) for line in lines if line.section == PREFERENCES] == [
        (PREFERENCES, "Jon loves performing on stage."),
    ]
