"""The memory graph: typed memories with an audit trail, graph queries, bulletins and stats."""
