"""Proves: supersession's precision set is usable as shipped and scored as documented.

Every hand label in ``bench/knowledge_updates/precision_labels.json`` says correct or wrong with a
reason and sits under the key its texts give (``label_id``), so a record made again from the same
statements finds its label; precision counts labelled records only and lists the others to label.
"""

from __future__ import annotations

import json

from memory_pipeline.eval.updates import PRECISION_LABELS, label_id, score_precision


def test_every_label_is_keyed_by_its_texts_and_gives_a_reason():
    labels = json.loads(PRECISION_LABELS.read_text(encoding="utf-8"))["labels"]
    assert len(labels) >= 50
    assert {v["source"] for v in labels.values()} == {"data", "locomo-dev"}
    for key, label in labels.items():
        assert isinstance(label["correct"], bool) and label["why"].strip(), key
        assert len(key) == 32 and label["old_ref"] != label["new_ref"]
    # Both kinds occur: a set of only right or only wrong records would measure nothing.
    assert {v["correct"] for v in labels.values()} == {True, False}


def test_label_ids_ignore_attachments_code_and_spacing():
    said = "We moved the cutover to 5 December. [shares a photo of a calendar]\n```\ncutover --at 12-05\n```"
    assert label_id(said, "It is now 12 December.") == label_id("We moved the cutover to 5 December.", "It is now  12 December.")
    assert label_id("a", "b") != label_id("b", "a")


def test_precision_counts_labelled_records_and_lists_the_rest():
    labels = {label_id("a", "b"): {"correct": True}, label_id("c", "d"): {"correct": False}}
    records = [{"id": label_id(o, n)} for o, n in (("a", "b"), ("c", "d"), ("e", "f"))]
    scored = score_precision(records, labels)
    assert (scored["records"], scored["correct"], scored["wrong"], scored["unlabelled"], scored["precision"]) == (3, 1, 1, 1, 0.5)
    assert scored["unlabelled_records"] == [records[2]]
