"""Auto-inject skips trivial messages, keeps results above its threshold, and fits its budget.

The budget is counted with the embedder's own ``count_tokens``; the hashing embedder counts
words, so the expected sizes here are easy to see.
"""

from __future__ import annotations

import pytest

from memory_pipeline.recall.inject import HEADER, format_memory_line, inject, is_trivial


@pytest.mark.parametrize("message", ["ok thanks!", "yes, please do it", "hi there", "", "   ", "what is it?"])
def test_trivial_messages_inject_nothing(indexed, settings, embedder, message):
    assert is_trivial(message)
    result = inject(message, "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings)
    assert (result.section, result.matched, result.injected, result.top_score) == ("", 0, 0, 0.0)
    assert "meaningful words" in result.skipped_reason


def test_three_meaningful_words_are_enough():
    assert not is_trivial("refund annual plans")
    assert is_trivial("the refund, please")


def test_injects_relevant_memory_with_counts_and_citations(indexed, settings, embedder):
    result = inject("Can I get a refund on annual plans within 30 days?", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings)
    assert result.injected >= 1 and result.matched >= result.injected
    assert result.section.startswith(HEADER)
    assert "[support-bot/MEMORY.md#L" in result.section
    assert result.top_score >= 0.3
    assert all(r.score >= 0.3 for r in result.results)
    assert result.tokens == sum(embedder.count_tokens(format_memory_line(r)) for r in result.results)


def test_token_budget_is_never_exceeded(indexed, settings, embedder):
    loose = inject("billing dashboard outage queue worker email VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0.0)
    assert loose.injected >= 2
    sizes = [embedder.count_tokens(format_memory_line(r)) for r in loose.results]
    budget = sizes[0] + 1
    tight = inject("billing dashboard outage queue worker email VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0.0, token_budget=budget)
    assert 1 <= tight.injected < loose.injected
    assert tight.tokens <= budget
    assert tight.matched == loose.matched
    none = inject("billing dashboard outage queue worker email VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0.0, token_budget=2)
    assert none.injected == 0 and none.section == "" and none.matched == loose.matched


def test_nothing_scores_above_a_high_threshold(indexed, settings, embedder):
    result = inject("completely unrelated zebra migration patterns", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0.99)
    assert (result.injected, result.section) == (0, "")


@pytest.mark.slow
def test_budget_is_counted_with_the_real_models_tokenizer(tmp_path):
    from memory_pipeline.embedding import MiniLMEmbedder
    from memory_pipeline_tests.helpers.recall import build_workspace, ingest, recall_settings

    root = tmp_path / "agents"
    build_workspace(root)
    lance_uri = str(tmp_path / "lancedb")
    ingest(root, lance_uri, embedder="minilm")
    settings = recall_settings(root, lance_uri).model_copy(update={"embedder": "minilm"})
    model = MiniLMEmbedder()
    message = "What did you change about my API rate limit, and how should invoices reach finance?"
    full = inject(message, "support-bot", "alice", store=lance_uri, embedder=model, settings=settings, min_score=0.0, token_budget=10_000)
    assert full.injected >= 2
    first = model.count_tokens(format_memory_line(full.results[0]))
    tight = inject(message, "support-bot", "alice", store=lance_uri, embedder=model, settings=settings, min_score=0.0, token_budget=first)
    assert tight.injected >= 1 and tight.tokens <= first
    assert tight.tokens == sum(model.count_tokens(format_memory_line(r)) for r in tight.results)
    assert "2,000 requests per minute" in full.section
