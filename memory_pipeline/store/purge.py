"""Leave no byte of a table's deleted rows, with ordinary LanceDB commits only.

A LanceDB delete or update only marks rows: their text stays in data files (compaction keeps a
fragment with few deletions as it is), in older versions and in the full-text index.
``purge_table`` removes all three without ever overwriting the table from a snapshot, which on
object storage (no commit lock) would silently drop a writer's commit that lands between the
read and the overwrite. Each step is a commit LanceDB rebases onto a concurrent one or reports as
a conflict, and a conflict is retried as the store retries its writes, so a concurrent write is
kept. Used by ``forget_tenant`` and by forgetting one typed memory.
"""

from __future__ import annotations

import logging
import warnings
from datetime import timedelta

from memory_pipeline.store.base import retry_on_conflict

log = logging.getLogger(__name__)

_FULL_TEXT = ("FTS", "INVERTED")
_SCALAR = {"BITMAP": "BITMAP", "BTREE": "BTREE", "LABELLIST": "LABEL_LIST"}  # listed as -> created as


def commit(write, *args, **kwargs):
    """One LanceDB write, retried on a commit conflict like the store's own writes."""
    return retry_on_conflict(write)(*args, **kwargs)


def purge_table(table, local: bool) -> None:
    """Rewrite a table's live rows into new files, rebuild its indices and drop older versions.

    Compaction keeps a fragment with few deletions as it is, so the table is rewritten in place
    instead: updating every row (to itself) moves each live row into new files and drops the old
    fragments whole; then the scalar and full-text indices are rebuilt over the new files (an
    index built on an empty table covers nothing: there the writers build it later) and every
    older version is removed with the files only it used.
    """
    indices = [(i.name, i.index_type.upper().replace("_", ""), list(i.columns)) for i in table.list_indices()]
    column = table.schema.names[0]
    commit(table.update, values_sql={column: column})
    empty = table.count_rows() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kind, columns in indices:
            if not empty and kind in _FULL_TEXT:
                commit(table.create_fts_index, columns[0], use_tantivy=False, replace=True, with_position=False, name=name)
            elif not empty and kind in _SCALAR:
                commit(table.create_scalar_index, columns[0], index_type=_SCALAR[kind], replace=True, name=name)
            else:  # its files still hold the deleted rows; recall rebuilds a vector index when it needs one
                commit(table.drop_index, name)
                if not empty:
                    log.warning("index %s (%s) of %s dropped after purging, not rebuilt", name, kind, table.name)
    drop_old_versions(table, local)


def drop_old_versions(table, local: bool) -> None:
    """Remove every version but the latest. Files no version ever committed (a write in flight,
    or one that crashed) are removed only on a local folder, where the commit lock keeps every
    writer out meanwhile; on object storage they may belong to a concurrent write."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "removes every version": that is the point
        commit(table.optimize, cleanup_older_than=timedelta(0), delete_unverified=local)
