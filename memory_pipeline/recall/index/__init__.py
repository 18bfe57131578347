"""Recall's per-tenant indices: the IVF over vectors (``ann``), BM25 over words (``bm25``), their
copies on disk (``files``), updated from the rows that changed (``update``) and written ahead of
the first query by the nightly maintenance (``persist``)."""
