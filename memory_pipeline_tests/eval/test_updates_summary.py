"""Proves: the knowledge-update scenarios load with their kind (transcript or notes), and the summary
scores newer-first, new@1 and whether a default search found the current value, for transcripts
and notes apart, from the answers as search returned them.

Plain values: the pipeline itself is run by ``memory-pipeline eval updates`` (a process per
command, minutes long), not here.
"""

from __future__ import annotations

from memory_pipeline.eval.updates import DEFAULT_DATA, Scenario, _summarize, kind_of, load_scenarios


def hit(text: str) -> dict:
    return {"citation": "x", "text": text, "when": None, "superseded": None, "score": 0.5}


def test_the_scenarios_load_with_their_kind():
    scenarios, _ = load_scenarios(DEFAULT_DATA)
    kinds = {sc.id: kind_of(sc) for sc in scenarios}
    assert (kinds["keys-new-place"], kinds["notes-city"], kinds["warehouse-location"]) == ("transcript", "notes", "notes")
    assert all(sc.new and sc.old for sc in scenarios if sc.changed)
    assert {sc.id: sc.answer for sc in scenarios if sc.id.startswith("old-note-")} == {
        "old-note-allergy": "penicillin", "old-note-partner": "Theo",
        "old-note-vpn": "vpn-lyon.example.net", "old-note-cat-diet": "kidney diet",
    }


def test_the_summary_scores_each_kind_apart(tmp_path):
    moved = Scenario("moved", "user", "dana", [{"at": "2026-05-04T19:10:00Z", "say": "x"}], "Where?", True,
                     new="York", old=["Leeds"])
    noted = Scenario("noted", "user", "ivo", [{"note": "2026-01-10", "say": "x"}], "Where?", True,
                     new="Denver", old=["Boston"])
    kept = Scenario("kept", "user", "bram", [{"note": "2026-07-20", "say": "x"}], "Which?", False,
                    answer="penicillin")
    before = {"moved": [hit("Leeds"), hit("York")], "noted": [hit("Denver"), hit("Boston")], "kept": []}
    after = {"moved": [hit("York"), hit("Leeds")], "noted": [hit("Denver")], "kept": [hit("penicillin")]}
    default = {"moved": [hit("York")], "noted": [], "kept": [hit("allergic to penicillin")]}
    records = {"moved": [{"old_ref": "a#L1"}], "noted": [], "kept": []}
    texts = {"moved": {"a#L1": "I live in Leeds"}, "noted": {}, "kept": {}}
    summary = _summarize([moved, noted, kept], before, after, default, records, texts, {}, tmp_path)
    assert summary["by_kind"] == {
        "transcript": {"changed": 1, "newer_first": {"before": 0.0, "after": 1.0},
                       "new_at_1": {"before": 0.0, "after": 1.0}, "detected": 1.0, "default_found": 1.0},
        "notes": {"changed": 1, "newer_first": {"before": 1.0, "after": 1.0},
                  "new_at_1": {"before": 1.0, "after": 1.0}, "detected": 0.0, "default_found": 0.5},
    }
    assert (summary["newer_first"], summary["false_supersessions"]) == ({"before": 0.5, "after": 1.0}, 0)
