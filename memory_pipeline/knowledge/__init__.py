"""The knowledge graph (L2): entities and relations with validity intervals, extracted from
conversation turns by consolidation, deduplicated within a tenant (``dedup``) and read by the
memory tools."""
