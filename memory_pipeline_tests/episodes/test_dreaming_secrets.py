"""Dreaming counts the secrets it scrubs: a preference and a decision that quote credentials are
written with placeholders, and the result says how many were redacted, on the extractive path
and when an LLM rewrites the lines (it only ever sees them scrubbed). A line already in the file
is not added again, so its secret is not counted twice."""

from datetime import UTC, datetime

from memory_pipeline.consolidation.assets import episodic_summaries
from memory_pipeline.consolidation.pipeline import dream
from memory_pipeline.episodes.dream_lines import collect_lines
from memory_pipeline.episodes.dreaming import DECISIONS, PREFERENCES, Line, llm_lines, write_document
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, say, store_for

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PASSWORD = "hunter2secretpass"
ANN = Tenant("bot", "ann")


def _session(root, lance_uri, instance) -> None:
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", f"I prefer that deploys use my token {TOKEN} in the header.", "2026-10-01T09:00:00Z"),
        say("user", f"We decided to point staging at postgres://admin:{PASSWORD}@db.internal:5432/app for now.", "2026-10-01T09:01:00Z"),
        say("user", "I prefer short answers with code samples.", "2026-10-01T09:02:00Z"),
        completed="2026-10-01T09:05:00Z",
    ))
    consolidate(instance, make_resources(root, lance_uri), "2026-10-01", tenant=ANN.key, assets=[episodic_summaries])


def test_dreaming_reports_the_secrets_it_scrubbed(root, lance_uri, instance):
    _session(root, lance_uri, instance)
    report = dream(root, store_for(lance_uri), ANN, datetime(2026, 10, 2, tzinfo=UTC))
    text = report.result.path.read_text()
    assert TOKEN not in text and PASSWORD not in text
    assert "[REDACTED:github_token]" in text.split("## Preferences")[1].split("##")[0]
    assert "[REDACTED:" in text.split("## Key decisions")[1]
    assert report.result.secrets_redacted == 2
    # The same lines again (a second run the same day): nothing added, nothing counted.
    lines, _ = collect_lines(root, report.episodes, [], user_name=ANN.user_id)
    again = write_document(report.result.path, ANN, datetime(2026, 10, 2, tzinfo=UTC), lines, "extractive")
    assert (again.lines_added, again.secrets_redacted, again.text) == (0, 0, text)


class EchoChat:
    """An LLM that writes every candidate back under its section, unchanged."""

    def __init__(self):
        self.prompts: list[str] = []

    def chat(self, system: str, user: str, max_tokens: int) -> str:
        self.prompts.append(user)
        out = []
        for raw in user.splitlines():
            section, _, rest = raw.partition(": ")
            out += [f"## {section}", f"- {rest}"]
        return "\n".join(out)


def test_llm_lines_keep_the_count_of_the_candidates_they_rewrite(tmp_path):
    candidates = [
        Line(PREFERENCES, "Deploys use the token [REDACTED:github_token].", "[s1 · a.jsonl#L1]", secrets=1),
        Line(PREFERENCES, "Also mentioned [REDACTED:github_token] again.", "[s1 · a.jsonl#L1]", secrets=1),
        Line(DECISIONS, "Staging points at the shared database.", "[s1 · a.jsonl#L2]", secrets=0),
    ]
    chat = EchoChat()
    lines = llm_lines(chat, candidates)
    assert TOKEN not in chat.prompts[0]
    assert [line.secrets for line in lines] == [2, 0, 0]  # a citation's count, on its first line
    result = write_document(tmp_path / "d.md", ANN, datetime(2026, 10, 2, tzinfo=UTC), lines, "llm")
    assert (result.lines_added, result.secrets_redacted) == (3, 2)
