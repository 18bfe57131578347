"""The one sentence classifier and the episode cues read from it.

Proves: a sentence gets one memory type (``classify``), and its cue (what the compaction flush and
dreaming keep) is that type seen as preference, decision, action or fact; questions never count,
preferences and facts count only in the user's own words, and a user's sentence that names
someone or a number is a fact when no type matches; a relative named in a deed makes no identity,
a liking of what the other speaker just offered no preference and checking it out no todo. Typed
memories and cues once had two rule sets that disagreed on the same sentence; these pairs pin the
single answer.
"""

import pytest

from memory_pipeline.text.memory_types import ACTION, DECISION, FACT, PREFERENCE, Cue, classify, cue_kind, cues

ANSWERS = {
    # (memory type, cue from the user, cue from the assistant): the sentences that get it
    ("preference", PREFERENCE, None): (
        "I prefer email over calls.", "We love hiking in the mountains on weekends.",
        "Painting landscapes is my favorite!", "I'm allergic to penicillin, it gives me hives.",
        "I like those suggestions, but I prefer quiet mornings.",
    ),
    ("decision", DECISION, DECISION): (
        "We decided to launch Falcon on 5 December.", "Deploy window moved to Wednesdays at 10:00 UTC.",
        "We replaced Jenkins with GitHub Actions.", "Tuesday it is.",
    ),
    ("todo", ACTION, ACTION): ("I'll send the rollout checklist by Friday.", "Open items: renew the TLS cert by Friday.",
                               "I'll check out Schitt's Creek tonight.", "I need you to remind me to check with the director.",
                               "Also remind me about the Apollo review."),
    ("goal", ACTION, ACTION): ("We need to get the word out about the fundraiser.",),
    ("identity", FACT, None): (
        "I moved to Denver last month.", "From 1 December my manager is Tomás Ribeiro.",
        "Dana Whitfield, my manager, wants uptime numbers.", "I'm offline tonight, taking my daughter Emma out.",
        "I got a new job as a nurse at St. Mary's.", "My job at the bakery keeps me busy.",
    ),
    # A job lost or left, or a place a trip takes the speaker, is what happened, not who the speaker
    # is (these were typed identity).
    ("event", FACT, None): (
        "Lost my job as a banker yesterday.", "I lost my job at Door Dash this month.",
        "Since I lost my job at Door Dash, things have been tough.",
        "I'm thinking of visiting the onsen while I'm in Tokyo.",
    ),
    # A relative named in what happened is not who the speaker is (these were typed identity).
    ("fact", FACT, None): ("We celebrated my daughter's birthday with a concert.",),
    ("observation", FACT, None): (
        "We were all freaked when my son got into an accident.", "My kids and I just finished another painting.",
    ),
    ("routine", FACT, None): ("I drive to the office every day.",),
    (None, FACT, None): ("Rui Santos owns the loader and it peaks at 1,600 req/min.",),
    # A request for the open items now is none of them (it was typed a todo); a liking of what the
    # other speaker just offered is a reaction, not a taste, and checking it out a thanks, not a todo;
    # a reminder is a todo when it is asked for.
    (None, None, None): ("I'll never forget that day.", "Here it is.", "Keep going with it!",
                         "Last thing: list my open items with dates, please.",
                         "I like those suggestions, especially the brass lamps.", "I love the idea of a cream-colored mat!",
                         "I like both of those pitches, can you combine them?", "I love the sound of these recipes!",
                         "I'll check out those websites and apps.",
                         # a reminder things give, not one asked for (these were typed todos)
                         "Even made a tattoo to remind myself about it.",
                         "I use sticky notes to remind myself to do the breathing exercises."),
}
SENTENCES = [(sentence, *answer) for answer, sentences in ANSWERS.items() for sentence in sentences]


@pytest.mark.parametrize(("sentence", "memory_type", "from_user", "from_assistant"), SENTENCES)
def test_one_answer_per_sentence(sentence, memory_type, from_user, from_assistant):
    typed = classify(sentence)
    assert (typed[0] if typed else None) == memory_type
    assert (cue_kind(sentence, from_user=True), cue_kind(sentence, from_user=False)) == (from_user, from_assistant)


def test_questions_and_short_sentences_are_no_cue():
    assert cue_kind("Should we switch the deploy window to Friday?", from_user=True) is None
    assert cue_kind("I prefer tea.", from_user=True) == PREFERENCE
    assert cue_kind("Prefer tea.", from_user=True) is None


def test_cues_of_a_text_in_order():
    text = "I prefer email over calls. How are you? We decided to launch Falcon on 5 December."
    assert cues(text, from_user=True) == [
        Cue(PREFERENCE, "I prefer email over calls."), Cue(DECISION, "We decided to launch Falcon on 5 December."),
    ]
