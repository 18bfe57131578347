"""Recall: hybrid search, exact reads, drill-down and auto-inject over a tenant's memory (DESIGN §6).

    from memory_pipeline.recall import search, get, expand, grep, inject, is_read_only
"""

from memory_pipeline.recall.expand import ExpandError, Unit, expand
from memory_pipeline.recall.get import AccessDeniedError, GetError, GetResult, get
from memory_pipeline.recall.grep import GrepError, GrepResult, grep
from memory_pipeline.recall.inject import InjectResult, inject
from memory_pipeline.recall.registry import register_source
from memory_pipeline.recall.scope import is_read_only, recall_scopes
from memory_pipeline.recall.search import NoIndexError, RecallError, SearchResult, search
from memory_pipeline.recall.sources import RecallSource

__all__ = [
    "AccessDeniedError", "ExpandError", "GetError", "GetResult", "GrepError", "GrepResult", "InjectResult",
    "NoIndexError", "RecallError", "RecallSource", "SearchResult", "Unit", "expand", "get", "grep", "inject",
    "is_read_only", "recall_scopes", "register_source", "search",
]
