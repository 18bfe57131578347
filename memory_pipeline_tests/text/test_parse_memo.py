"""Proves: the shared pipeline (``load_pipeline``: numpy's BLAS, the attribute ruler's lookup) parses as
spaCy's default load does;
``parse`` gives the docs ``nlp.pipe`` gives (tags, lemmas, parse, entities), whatever
the batch; a text parsed once is not parsed again by the same pipeline while it is among the
recent tokens, so a session's summary and its graph share one parse (the graph parses only a turn's
attachment captions, which the summary leaves out, and reads the same facts); the memo holds at most
``PARSE_MEMO_TOKENS`` tokens and drops the least recently used first. Real spaCy: the claim is
that a remembered doc equals a fresh one."""

from datetime import UTC, datetime

import memory_pipeline.text.statements as statements_module
from memory_pipeline.knowledge.relations import extract, utterances
from memory_pipeline.text.ruler import RulerLookup
from memory_pipeline.text.statements import parse, statements
from memory_pipeline.text.turns import Turn

TEXTS = [
    "Lost my job as a banker yesterday.",
    "Gina opened her store in Rome last week.",
    "I'm starting a dance studio with Maria in March!",
    "Lost my job as a banker yesterday.",
]


class CountingPipeline:
    """A real pipeline that records which texts it was asked to parse."""

    def __init__(self, nlp):
        self.nlp = nlp
        self.parsed: list[str] = []

    def pipe(self, texts, **options):
        texts = list(texts)
        self.parsed += texts
        return self.nlp.pipe(texts, **options)


def signature(doc):
    tokens = [(t.text, t.tag_, t.pos_, str(t.morph), t.lemma_, t.dep_, t.head.i, t.ent_type_, t.is_sent_start) for t in doc]
    return tokens, [(e.text, e.label_) for e in doc.ents]


def test_docs_equal_a_fresh_parse_and_each_text_is_parsed_once(nlp):
    counting = CountingPipeline(nlp)
    first = parse(TEXTS, counting, batch_size=2)
    assert [signature(d) for d in first] == [signature(nlp(t)) for t in TEXTS]
    assert counting.parsed == TEXTS[:3]  # the repeated text is parsed once

    again = parse([TEXTS[1], "A new sentence about Oslo."], counting)
    assert again[0] is first[1]
    assert counting.parsed == [*TEXTS[:3], "A new sentence about Oslo."]


def test_the_graph_reads_a_turns_words_from_its_summarys_parse_and_its_captions_apart(nlp):
    ts = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    turns = [
        Turn(1, "Gina", "I opened my flower shop in Rome last week! [shares a photo of a shop front in Rome]", ts, "D1:1"),
        Turn(2, "Jon", "Congrats!\n I adopted a puppy.", ts, "D1:2"),
    ]
    counting = CountingPipeline(nlp)
    statements(turns, "conv-1", counting)
    summary_parsed = list(counting.parsed)
    found = extract(utterances(turns, (), "conv-1"), nlp=counting)

    assert summary_parsed == ["I opened my flower shop in Rome last week!", "Congrats! I adopted a puppy."]
    assert counting.parsed == [*summary_parsed, "[shares a photo of a shop front in Rome]"]
    facts = {(f.subject, f.predicate, f.object, f.line) for f in found.facts}
    assert {("Gina", "opened", "flower shop", 1), ("Jon", "has_pet", "puppy", 2)} <= facts, facts
    assert ("Rome", "GPE") in {(name, kind) for name, kind, _, _ in found.mentions}


def test_disabled_components_are_parsed_apart(nlp):
    counting = CountingPipeline(nlp)
    full = parse(TEXTS[:1], counting)[0]
    without_ner = parse(TEXTS[:1], counting, disable=["ner"])[0]
    assert counting.parsed == TEXTS[:1] * 2
    assert without_ner is not full and not without_ner.has_annotation("ENT_IOB")


def test_least_recently_used_texts_leave_first(nlp, monkeypatch):
    counting = CountingPipeline(nlp)
    a, b, c = "Jon lives in Paris.", "Gina works at Acme.", "Maria moved to Rome."
    sizes = [len(d) for d in parse([a, b], counting)]
    monkeypatch.setattr(statements_module, "PARSE_MEMO_TOKENS", sum(sizes) + 1)
    parse([a], counting)  # a is now the most recent
    parse([c], counting)  # over the limit: b leaves, a stays
    counting.parsed.clear()
    parse([a, b, c], counting)
    assert counting.parsed == [b]


def test_the_shared_pipeline_computes_on_numpys_blas_and_parses_as_spacys_default(nlp):
    import spacy
    from thinc.api import NumpyOps

    stock = spacy.load(statements_module.SPACY_MODEL)
    texts = [*TEXTS, "Caroline went to the LGBTQ support group on 7 May 2023 and said it was powerful.",
             "We moved from Boston to Denver after Melanie got the job at Acme Corp in 2021.",
             # the ruler's patterns of two tokens, and a lemma it sets
             "Y'all ain't gonna believe it, c'mon, let's go: there is a cat and I gotta run.  "]
    assert [signature(d) for d in nlp.pipe(texts)] == [signature(d) for d in stock.pipe(texts)]
    assert isinstance(nlp.get_pipe("attribute_ruler").match.__self__, RulerLookup)

    def layers(pipeline):
        return [node for _, c in pipeline.components if getattr(c, "model", None) for node in c.model.walk()]

    assert all(isinstance(node.ops, NumpyOps) and not node.ops.use_blis for node in layers(nlp))
    assert any(getattr(node.ops, "use_blis", False) for node in layers(stock))
