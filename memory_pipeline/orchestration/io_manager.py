"""An IO manager that stores one file per partition, so a single run may cover many tenants.

Dagster's file-system IO manager refuses an output of several partitions (a backfill run with
``BackfillPolicy.single_run()``); this one takes ``{partition_key: value}`` for such an output and
returns the same mapping when such an input is loaded. Values are pickled: they are short-lived
hand-offs between the steps of one run, not the memory itself, which lives in LanceDB.

No asset of the pipeline hands a value through it today (the L0 chunks and vectors stay inside
their one step); it is the instance's IO manager for any step that would, and ``forget`` still
deletes a forgotten tenant's files that earlier versions wrote here.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import dagster as dg


class PartitionedPickleIOManager(dg.ConfigurableIOManager):
    base_dir: str | None = None  # default: <DAGSTER_HOME or temp>/storage/memory_pipeline

    def storage_folder(self) -> Path:
        """The folder the files go under."""
        if self.base_dir:
            return Path(self.base_dir)
        home = os.environ.get("DAGSTER_HOME") or tempfile.gettempdir()
        return Path(home) / "storage" / "memory_pipeline"

    def _path(self, asset_key: dg.AssetKey | None, partition: str | None, identifier: list[str] | None = None) -> Path:
        if asset_key is None:  # an op's output (e.g. of a maintenance job): one file per run and step
            return self.storage_folder().joinpath("ops", *identifier).with_suffix(".pkl")
        folder = self.storage_folder().joinpath(*asset_key.path)
        name = (partition or "__unpartitioned__").replace("/", "%2F").replace("|", "%7C")
        return folder / f"{name}.pkl"

    def _keys(self, context) -> list[str | None]:
        if context.has_asset_partitions:
            return list(context.asset_partition_keys)
        return [None]

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        keys = self._keys(context)
        values = obj if len(keys) > 1 else {keys[0]: obj}
        for key in keys:
            path = self._path(context.asset_key if context.has_asset_key else None, key, context.get_identifier())
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as fh:
                pickle.dump(values[key], fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # a reader never sees a half-written file

    def load_input(self, context: dg.InputContext) -> Any:
        keys = self._keys(context)
        values = {}
        for key in keys:
            asset_key = context.asset_key if context.has_asset_key else None
            identifier = None if asset_key else context.upstream_output.get_identifier()
            with open(self._path(asset_key, key, identifier), "rb") as fh:
                values[key] = pickle.load(fh)
        return values if len(keys) > 1 else values[keys[0]]
