"""Proves: a local home whose ``dagster.yaml`` was written when the instance's modules lived in
``orchestration/`` still opens: the module lines are rewritten to where the modules are now and
nothing else in the file changes."""

from __future__ import annotations

import dagster as dg

from memory_pipeline.orchestration.runs import instance_config, local_instance
from memory_pipeline.orchestration.instance.sqlite import storage_config


def test_a_home_written_before_the_move_still_opens(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    current = instance_config(storage_config(str(home)))
    old = current.replace("memory_pipeline.orchestration.instance.", "memory_pipeline.orchestration.") + "# kept\n"
    assert old != current + "# kept\n"
    (home / "dagster.yaml").write_text(old)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = local_instance(home)
    try:
        assert isinstance(instance, dg.DagsterInstance)
        assert instance.get_runs() == []
        assert (home / "dagster.yaml").read_text() == current + "# kept\n"
    finally:
        instance.dispose()
