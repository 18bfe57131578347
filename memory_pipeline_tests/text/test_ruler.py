"""Proves: the attribute ruler's lookup (``text.ruler``) finds exactly the matches spaCy's
``Matcher`` finds, for every kind of pattern it reads (equality, ``IN``, ``NOT_IN``, ``REGEX``,
flags, patterns of several tokens, several patterns under one rule), so the ruler sets the same
attributes; a rule it cannot read (an operator) leaves the ruler on its ``Matcher``. Real spaCy;
the model's own 180 patterns are compared in ``test_parse_memo.py``."""

import spacy

from memory_pipeline.text.ruler import RulerLookup, fast_attribute_ruler

RULES = [
    ([[{"LOWER": "gon"}, {"LOWER": "na"}]], {"LEMMA": "go"}, 0),
    ([[{"LOWER": "gon"}, {"LOWER": "na"}]], {"LEMMA": "to"}, 1),
    ([[{"LOWER": {"IN": ["cat", "dog"]}}]], {"NORM": "pet"}, 0),
    ([[{"ORTH": {"REGEX": "^[A-Z][a-z]+$"}, "LOWER": {"NOT_IN": ["the"]}}]], {"LEMMA": "Name"}, 0),
    ([[{"IS_SPACE": True}]], {"NORM": "_space_"}, 0),
    ([[{"IS_PUNCT": True}, {"LOWER": {"REGEX": "^y"}}]], {"NORM": "after_punct"}, -1),
    ([[{"LOWER": "got"}], [{"LOWER": "gets"}]], {"LEMMA": "get"}, 0),
    ([[{"LOWER": "cat"}]], {"NORM": "cat_last_rule_wins"}, 0),
]
TEXTS = [
    "The Cat and the dog? Yes, gonna see Bob  gets it, got it. gon na",
    "",
    "gon",
    "Cat cat CAT, yay",
]


def pipeline(extra=()):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    for patterns, attrs, index in [*RULES, *extra]:
        ruler.add(patterns, attrs, index=index)
    return nlp, ruler


def attributes(doc):
    return [(t.text, t.lemma_, t.norm_) for t in doc]


def test_the_lookup_finds_the_matchers_matches_and_the_ruler_sets_the_same_attributes():
    nlp, ruler = pipeline()
    lookup = RulerLookup(ruler)
    docs = [nlp.make_doc(t) for t in TEXTS]
    stock = [ruler.match(d) for d in docs]
    assert sum(map(len, stock)) > 10
    assert [lookup.match(d) for d in docs] == stock
    before = [attributes(ruler(nlp.make_doc(t))) for t in TEXTS]
    assert fast_attribute_ruler(nlp)
    assert [attributes(d) for d in nlp.pipe(TEXTS)] == before
    assert ("gon", "go", "gon") in before[0] and ("na", "to", "na") in before[0]
    assert ("cat", "", "cat_last_rule_wins") in before[3]


def test_a_rule_with_an_operator_keeps_the_matcher():
    nlp, ruler = pipeline(extra=[([[{"LOWER": "very", "OP": "+"}]], {"NORM": "very"}, 0)])
    stock_match = ruler.match
    assert not fast_attribute_ruler(nlp)
    assert ruler.match == stock_match
