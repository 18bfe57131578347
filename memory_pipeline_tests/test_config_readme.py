"""README.md's configuration table stays true to ``Settings``: every field has a row named by its
environment variable, and every plain default is the one ``config.py`` has (the table once said
transcript windows of 3 turns with stride 2 after the defaults became 1 and 1). The nested values
(``MEMORY_PIPELINE_TEAMS``, ``MEMORY_PIPELINE_RECALL``) are set as JSON, as the table says, and
the environment is read as pydantic-settings read it before ``Settings`` stopped importing it: a
variable's name in any case, a value the caller passes winning (a nested one key by key), a
value that is not JSON refused with the variable's name.
"""

from __future__ import annotations

import re

import pytest

from memory_pipeline.config import RecallConfig, Settings
from memory_pipeline_tests.helpers import REPO

PREFIX = "MEMORY_PIPELINE_"


def readme_table() -> dict[str, str]:
    """{variable: default cell} of the table under README's "## Configuration"."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(rf"`({PREFIX}[A-Z_]+)`", cells[0]) if len(cells) >= 3 else None
        if match:
            rows[match[1]] = cells[1]
    return rows


def test_every_setting_has_a_row_with_its_default():
    rows = readme_table()
    variables = {PREFIX + name.upper(): field for name, field in Settings.model_fields.items()}
    assert sorted(set(variables) - set(rows)) == [], "settings without a README row"
    assert sorted(set(rows) - set(variables)) == [], "README rows for settings that do not exist"
    for variable, field in variables.items():
        if isinstance(field.default, (str, int, float)):
            assert rows[variable] == f"`{field.default}`", variable


def test_nested_settings_are_read_as_json(monkeypatch):
    monkeypatch.setenv(f"{PREFIX}TEAMS", '{"helper-bot": "support-bot"}')
    monkeypatch.setenv(f"{PREFIX}RECALL", '{"k": 10, "min_score": 0.3, "mmr": true}')
    settings = Settings()
    assert settings.teams == {"helper-bot": "support-bot"}
    # Keys left out keep their defaults.
    assert settings.recall == RecallConfig(k=10, min_score=0.3, mmr=True)
    assert settings.recall.vector_weight == 0.7


def test_a_recall_key_alone_is_not_read(monkeypatch):
    """As the table says: no nested delimiter, so ``MEMORY_PIPELINE_RECALL__K`` changes nothing."""
    monkeypatch.setenv(f"{PREFIX}RECALL__K", "10")
    assert Settings().recall.k == RecallConfig().k


def test_the_environment_is_read_in_any_case_and_the_caller_wins(monkeypatch):
    monkeypatch.setenv(f"{PREFIX.lower()}root", "/srv/agents")
    monkeypatch.setenv(f"{PREFIX}EMBED_BATCH_SIZE", "8")
    monkeypatch.setenv(f"{PREFIX}RECALL", '{"k": 10, "min_score": 0.3}')
    settings = Settings(lancedb_uri="s3://bucket/memory", recall={"min_score": 0.5})
    assert (settings.root, settings.embed_batch_size, settings.lancedb_uri) == ("/srv/agents", 8, "s3://bucket/memory")
    assert settings.recall == RecallConfig(k=10, min_score=0.5)
    assert Settings(recall=RecallConfig(mmr=True)).recall == RecallConfig(mmr=True)


def test_a_nested_setting_that_is_not_json_is_named(monkeypatch):
    monkeypatch.setenv(f"{PREFIX}TEAMS", "helper-bot=support-bot")
    with pytest.raises(ValueError, match=f"{PREFIX}TEAMS is not valid JSON"):
        Settings()
