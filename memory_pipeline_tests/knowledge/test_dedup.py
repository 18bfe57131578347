"""Entity deduplication rules: "Alice" merges into "Alice Johnson" when that is the only full name
it fits, is flagged (not merged) when it fits two, and spelling variants merge by fuzzy matching;
different kinds of things ("Lumen" and "Lumen Pipes") stay apart."""

from memory_pipeline.knowledge.dedup import AMBIGUOUS, MERGED, plan_merges, strict_key


def entity(eid: str, name: str, etype: str = "PERSON", episodes: int = 1, vector=None) -> dict:
    return {"id": eid, "name": name, "type": etype, "episode_ids": [f"e{i}" for i in range(episodes)], "vector": vector}


def by_status(decisions, status):
    return {(d.from_id, d.into_id) for d in decisions if d.status == status}


def test_short_name_merges_into_the_only_full_name():
    decisions = plan_merges([entity("a", "Alice", episodes=5), entity("aj", "Alice Johnson"), entity("b", "Bob")])
    assert by_status(decisions, MERGED) == {("a", "aj")}
    assert by_status(decisions, AMBIGUOUS) == set()


def test_short_name_fitting_two_full_names_is_flagged_not_merged():
    decisions = plan_merges([entity("a", "Alice"), entity("aj", "Alice Johnson"), entity("as", "Alice Smith")])
    assert by_status(decisions, MERGED) == set()
    assert by_status(decisions, AMBIGUOUS) == {("a", "aj"), ("a", "as")}


def test_normalized_and_fuzzy_names_merge():
    decisions = plan_merges([
        entity("t1", "Dr. Tomás Ribeiro"), entity("t2", "Tomas Ribeiro"),
        entity("o1", "Cobalt Loop Recycling Inc.", "ORG"), entity("o2", "Cobalt Loop Recycling", "ORG"),
        entity("k1", "Keisha Browne"), entity("k2", "Keisha Brown", episodes=3),
    ])
    merged = by_status(decisions, MERGED)
    assert {frozenset(p) for p in merged} == {frozenset({"t1", "t2"}), frozenset({"o1", "o2"}), frozenset({"k1", "k2"})}
    assert ("k1", "k2") in merged  # into the name seen in more episodes


def test_last_name_and_vectors_decide_close_calls():
    close = [0.6, 0.8]
    decisions = plan_merges([
        entity("l", "Okonkwo"), entity("lo", "Lena Okonkwo"),
        entity("m1", "Marcus Lee", vector=close), entity("m2", "Marcos Lea", vector=close),
        entity("r1", "Rita Lopes", vector=[1.0, 0.0]), entity("r2", "Rita Lopez Vidal", vector=[0.0, 1.0]),
    ])
    assert ("l", "lo") in by_status(decisions, MERGED)
    assert {frozenset(p) for p in by_status(decisions, MERGED)} >= {frozenset({"m1", "m2"})}
    assert not {frozenset(p) for p in by_status(decisions, MERGED)} & {frozenset({"r1", "r2"})}


def test_different_kinds_stay_apart():
    decisions = plan_merges([entity("l", "Lumen", "ORG"), entity("lp", "Lumen Pipes", "PRODUCT"), entity("p", "Porto", "GPE"), entity("pp", "Porto", "PERSON")])
    assert by_status(decisions, MERGED) == set()
    assert strict_key("The Northern Ledger Ltd") == "northern ledger"
