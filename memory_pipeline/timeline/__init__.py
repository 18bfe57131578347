"""The timeline: which statement a later one replaced, decided once at write time and read by
everyone after. A tenant's statements (``statements``), what each sentence claims (``claims``),
which claims a later one supersedes (``supersede``, with the parses kept between runs in
``parse_cache``), when a knowledge-graph relation ends by the same record (``relation_ends``), and
the ``supersessions`` table those records live in (``records``). Consolidation writes them; the
typed memories, recall and the knowledge graph read them."""
