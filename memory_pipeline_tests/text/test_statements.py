"""Proves: a conversation is read as statements that say who said what, about whom, in which turn,
rewritten in the third person (pronouns, verb agreement, a dropped subject restored, an opening
interjection and the names it calls left out); salience
from the parse puts a dated first-person event above greetings, compliments, questions, orders
and "can't wait"; MMR keeps one of two restatements; a long turn is read to its end. Real spaCy:
the behaviour is its parse."""

from datetime import UTC, datetime

from memory_pipeline.text.salience import select
from memory_pipeline.text.statements import addressees, statements
from memory_pipeline.text.turns import Turn

TS = datetime(2023, 1, 20, 16, 4, tzinfo=UTC)


def turns(*pairs: tuple[str, str]) -> list[Turn]:
    return [Turn(n + 1, role, text, TS, f"D1:{n + 1}") for n, (role, text) in enumerate(pairs)]


def test_named_speakers_are_rewritten_in_the_third_person(nlp):
    said = statements(turns(
        ("Gina", "Hey Jon! Anything new?"),
        ("Jon", "Lost my job as a banker. I love dancing and I'm starting my own dance studio. Started a new class yesterday with my friends."),
        ("Gina", "Sorry about your job! I opened my store last week."),
    ), "conv-1", nlp)
    assert [(s.speaker, s.subject, s.text, s.turn_id) for s in said] == [
        ("Gina", "Gina", "Hey Jon!", "D1:1"),
        ("Gina", "Gina", "Anything new?", "D1:1"),
        ("Jon", "Jon", "Lost Jon's job as a banker.", "D1:2"),  # tagged as an order: the name stands in "my"
        ("Jon", "Jon", "Jon loves dancing and Jon is starting their own dance studio.", "D1:2"),
        ("Jon", "Jon", "Jon started a new class yesterday with their friends.", "D1:2"),
        ("Gina", "Gina", "Sorry about Jon's job!", "D1:3"),
        ("Gina", "Gina", "Gina opened their store last week.", "D1:3"),
    ]
    assert [s.said for s in said][4] == "Started a new class yesterday with my friends."


def test_an_opening_interjection_is_left_out_of_the_stored_sentence(nlp):
    said = statements(turns(
        ("Jon", "Yeah, I painted that lake sunrise last year!"),
        ("Gina", "Wow, Jon, glad you had a blast at the concert. Wow, Jon!"),
        ("Jon", "Hey Gina, since we last talked I've moved. No, I haven't sold the car."),
        ("Jon", "Hey Gina, started a new class yesterday with my friends."),
    ), "conv-1", nlp)
    assert [s.text for s in said] == [
        "Jon painted that lake sunrise last year!",
        "Glad Jon had a blast at the concert.",
        "Wow, Jon!",  # nothing is left after the call: the sentence stays as said
        "Since we last talked Jon has moved.",
        "No, Jon hasn't sold the car.",  # a "no" answers a question
        "Jon started a new class yesterday with their friends.",  # the dropped subject after the call
    ]
    assert said[0].said == "Yeah, I painted that lake sunrise last year!"
    assert said[-1].subject == "Jon"


def test_we_is_the_speaker_with_others_in_a_summary_only(nlp):
    said = turns(("Jon", "We've decided to move. We're leaving on Friday and we'll call Gina from our new place."))
    assert [s.text for s in statements(said, "conv-1", nlp, plural=True)] == [
        "Jon and others have decided to move.",
        "Jon and others are leaving on Friday and they will call Gina from their new place.",
    ]
    assert [s.text for s in statements(said, "conv-1", nlp)] == [  # typed memories and supersession read it as said
        "We've decided to move.", "We're leaving on Friday and we'll call Gina from our new place."]


def test_a_long_turn_is_read_to_its_end(nlp):
    filler = " ".join(f"Item {i} on the list stayed the same." for i in range(200))  # 7,000+ characters
    said = statements(turns(("Jon", filler + " I sold my boat to Gina last week.")), "conv-1", nlp)
    assert len(filler) > 7000 and len(said) == 201
    assert (said[-1].speaker, said[-1].text, said[-1].line) == ("Jon", "Jon sold their boat to Gina last week.", 1)


def test_user_and_assistant_turns():
    assert addressees(["Carol", None, "Carol"], "Carol") == [None, "Carol", None]
    assert addressees(["Jon", "Gina", "Jon"], "x") == ["Gina", "Jon", "Gina"]


def test_the_user_role_is_the_tenant_user_and_the_assistant_speaks_to_them(nlp):
    said = statements(turns(
        ("user", "Remind me to call Jonah. I don't like long answers."),
        ("assistant", "Noted, you prefer short answers."),
    ), "carol", nlp)
    assert [(s.speaker, s.subject, s.text) for s in said] == [
        ("Carol", "Carol", "Remind Carol to call Jonah."),
        ("Carol", "Carol", "Carol doesn't like long answers."),
        (None, "Carol", "Noted, Carol prefers short answers."),
    ]


def test_a_user_id_that_is_not_a_name_is_kept_as_it_is(nlp):
    said = statements(turns(("user", "I'm asking because my friends plan to work after graduating."),
                            ("assistant", "You could try an online course first.")), "d6233ab6", nlp)
    assert [s.text for s in said] == [
        "d6233ab6 is asking because their friends plan to work after graduating.",
        "d6233ab6 could try an online course first.",
    ]


def test_salience_ranks_news_above_chatter(nlp):
    said = statements(turns(
        ("Gina", "Wow, that's awesome!"),
        ("Jon", "I lost my job at the bank on Monday."),
        ("Gina", "What are you going to do?"),
        ("Jon", "Can't wait!"),
        ("Gina", "Don't forget to stay positive."),
        ("Jon", "I will open a dance studio in March."),
    ), "conv-1", nlp)
    ranked = [s.said for s in sorted(said, key=lambda s: -s.salience)]
    assert ranked[:2] == ["I will open a dance studio in March.", "I lost my job at the bank on Monday."]
    assert all(s.salience < 1.0 for s in said if s.said not in ranked[:2])


def test_mmr_keeps_one_of_two_restatements(nlp):
    said = statements(turns(
        ("Jon", "I'm starting a dance studio in the city."),
        ("Jon", "I am starting a dance studio in the city!"),
        ("Jon", "My sister Anna moved to Rome in May."),
    ), "conv-1", nlp)
    kept = select(said, lambda s: s.salience, lambda s: s.features.terms, k=3)
    assert sorted(s.turn_id for s in kept) in (["D1:1", "D1:3"], ["D1:2", "D1:3"])
