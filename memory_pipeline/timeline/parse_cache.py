"""Each statement's analysis kept between supersession runs: its spaCy parse and its vectors.

Supersession compares all of a tenant's statements on every run, so that re-running a day or
backfilling days in any order gives the same records. What it needs of each statement does not
depend on the others: the parse of each line (``supersede.claims_of``) and the vector of each
claim's masked text. Those are kept in the ``statement_parses`` table, one row per text hash and
tenant, and a run parses and embeds only the texts it has not seen; the pairwise decision is
made again over every statement, by the code of the day, from the same parses and vectors.

- A text the summaries or the graph parsed moments before is not parsed again: the process's one
  pipeline remembers its recent documents (``text.statements.parse``).
- A parse is kept as spaCy's own serialization of the document (``Doc.to_bytes``), so the claims
  are read from it again each run: a change to how claims are read applies at once. The key names
  the spaCy model, its version and its enabled pipes; another model parses everything again.
- A vector is keyed by the embedder's name and size and the masked text's hash (no text).
- Only turns and note lines are kept as parses: their words are in the workspace's files anyway.
  A typed memory is parsed on every run, so a forgotten memory's words are stored nowhere.
- The other steps that parse a tenant's turns (typed memories, summaries, the graph, dreaming;
  each a command of its own, in a process of its own) read their parses from the same rows
  (``ParseStore.parser``), and the first two keep what they parse: each turn's words are parsed
  once for the whole pipeline, not once per step.
- A run of supersession leaves exactly the rows it used and the parses of its turns' words: a
  text that left the tenant's files leaves the table with the next run, and forgetting the tenant
  deletes its rows with every other table's.
- A parse is stored and held compressed (zlib, fast level): a third of its bytes.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from memory_pipeline.store.base import LanceBase, retry_commit, sql_in, sql_str, stable_id
from memory_pipeline.store.tables import STATEMENT_PARSES

DOC, VECTOR = "zdoc", "vector"
"""Row kinds: a compressed parse, a vector. Rows of the uncompressed kind ``doc`` of before are
used by no run, so the next supersession run drops them."""
PIPE_CHUNK = 512
"""Texts whose documents are made and held at once."""
_NOT_KEPT = ["tensor", "user_data"]  # neither is read by claims; the tensor is most of a doc's bytes


def text_key(identity: str, text: str) -> str:
    return hashlib.sha256(f"{identity}\x1f{text}".encode("utf-8", "surrogateescape")).hexdigest()[:32]


def doc_packer():
    """srsly's msgpack packer (with its numpy encoder), made once for many documents."""
    import srsly

    return srsly.msgpack.Packer(use_bin_type=True)


def doc_bytes(doc, packer=None) -> bytes:
    """``Doc.to_bytes`` without the parts claims never read, byte for byte. ``Doc.to_bytes``
    makes a new packer on every call, and srsly then looks its encoders up again (an entry point
    scan, ~1.5 ms here): packing each parse of a conversation's 730 lines took 1.3 s, packing
    them with one ``packer`` 0.2 s."""
    return (packer or doc_packer()).pack(doc.to_dict(exclude=_NOT_KEPT))


def docs_from_bytes(vocab, blobs: list[bytes]) -> list:
    """``Doc.from_bytes`` of each, decoded as one msgpack array: srsly looks its decoders up
    again on every call (an entry point scan, 6-18 ms here), which made reading 400 stored parses
    one at a time take longer than the claims read from them."""
    import srsly
    from spacy.tokens import Doc

    if not blobs:
        return []
    messages = srsly.msgpack_loads(b"\xdd" + struct.pack(">I", len(blobs)) + b"".join(blobs))
    return [Doc(vocab).from_dict(message, exclude=_NOT_KEPT) for message in messages]


def pipeline_identity(nlp) -> str:
    """The spaCy model, its version and the pipes that run: what a parse depends on."""
    import spacy

    meta = getattr(nlp, "meta", {})
    return f"spacy-{spacy.__version__}:{meta.get('lang')}_{meta.get('name')}-{meta.get('version')}:{','.join(nlp.pipe_names)}"


class CachedParser:
    """Stands for the spaCy pipeline where a step parses a tenant's texts (supersession's claims,
    the turns of typed memories, summaries, the graph and dreaming): a text parsed before (in this
    run or a stored one) is read back from its serialization instead of parsed again, and a text
    the pipeline parsed recently comes from its memo (``text.statements.parse``)."""

    def __init__(self, nlp, stored: dict[str, bytes], keep: Callable[[str], bool]):
        self.nlp = nlp
        self.identity = pipeline_identity(nlp)
        self.stored = stored
        self.keep = keep  # whether a text may be stored (it is in the workspace's files)
        self.used: set[str] = set()
        self.new: dict[str, bytes] = {}
        self.parsed = 0  # texts spaCy parsed
        self.read_back = 0  # texts whose stored parse was read instead
        self.packer = doc_packer()

    @property
    def pipe_names(self) -> list[str]:
        return self.nlp.pipe_names

    def pipe(self, texts: Iterable[str], batch_size: int = 64, **options) -> Iterator:
        texts = list(texts)
        options = {name: value for name, value in options.items() if value}  # ``disable=[]`` is the plain call
        # A chunk of texts at a time: the documents of a big tenant's every turn at once took
        # hundreds of megabytes; a document needed again later is read back from its bytes.
        for start in range(0, len(texts), PIPE_CHUNK):
            yield from self._pipe(texts[start:start + PIPE_CHUNK], batch_size, options)

    def _pipe(self, texts: list[str], batch_size: int, options: dict) -> Iterator:
        keys = [text_key(self.identity, t) for t in texts]
        # In the order asked (a batch as the plain call would make it), each text once.
        missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in self.stored}.items())
        if not options:
            from memory_pipeline.text.statements import parse

            docs = parse([t for _, t in missing], self.nlp, batch_size=batch_size)
        else:
            docs = self.nlp.pipe([t for _, t in missing], batch_size=batch_size, **options)
        fresh = dict(zip((k for k, _ in missing), docs, strict=True))
        self.parsed += len(fresh)
        read = [k for k in dict.fromkeys(keys) if k not in fresh]
        self.read_back += len(read)
        fresh.update(zip(read, docs_from_bytes(self.nlp.vocab, [zlib.decompress(self.stored[k]) for k in read]), strict=True))
        for key, text in zip(keys, texts, strict=True):
            doc = fresh[key]
            if self.keep(text):
                if key not in self.stored:
                    self.stored[key] = self.new[key] = zlib.compress(doc_bytes(doc, self.packer), 1)
                self.used.add(key)
            yield doc

    def retain(self, texts: Iterable[str]) -> None:
        """Count the stored parses of ``texts`` as used by this run, though it did not read them."""
        self.used.update(k for k in (text_key(self.identity, t) for t in texts) if k in self.stored)


class CachedEmbedder:
    """Stands for the embedder: a text embedded before is not embedded again."""

    def __init__(self, embedder, stored: dict[str, bytes]):
        self.embedder = embedder
        self.name, self.dim = embedder.name, embedder.dim
        self.identity = f"{embedder.name}:{embedder.dim}"
        self.stored = stored
        self.used: set[str] = set()
        self.new: dict[str, bytes] = {}
        self.embedded = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [text_key(self.identity, t) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in self.stored}.items())
        if missing:
            vectors = np.asarray(self.embedder.embed([t for _, t in missing]), dtype=np.float32)
            for (key, _), vector in zip(missing, vectors, strict=True):
                self.stored[key] = self.new[key] = vector.tobytes()
            self.embedded += len(missing)
        self.used.update(keys)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = np.frombuffer(self.stored[key], dtype=np.float32)
        return out

    def count_tokens(self, text: str) -> int:
        return self.embedder.count_tokens(text)


class ParseStore(LanceBase):
    """The ``statement_parses`` table."""

    def load(self, tenant: str, kinds: Iterable[str] | None = None) -> dict[str, dict[str, bytes]]:
        """{kind: {key: bytes}} of the tenant's stored parses and vectors, of ``kinds`` only when
        given (each dict is used and grown by the run; ``keep_only`` is given the keys that were
        stored)."""
        out: dict[str, dict[str, bytes]] = {DOC: {}, VECTOR: {}}
        if not self.has(STATEMENT_PARSES):
            return out
        where = f"tenant = {sql_str(tenant)}" + (f" AND {sql_in('kind', list(kinds))}" if kinds is not None else "")
        rows = self.read(STATEMENT_PARSES, where, ["kind", "key", "data"])
        for kind, key, data in rows.iter_rows():
            out.setdefault(kind, {})[key] = data
        return out

    def parser(self, tenant: str, nlp, keep: bool) -> CachedParser:
        """A stand-in for ``nlp`` that reads the tenant's stored parses; with ``keep``, it holds
        the parses it makes in ``new`` for ``add``. For the words of the tenant's turns only
        (``text.statements.statements``): those are what supersession keeps (``retain``)."""
        return CachedParser(nlp, self.load(tenant, [DOC])[DOC], lambda _text: keep)

    def _rows(self, tenant: str, new: dict[str, dict[str, bytes]]) -> list[dict]:
        return [
            {"id": stable_id("parse", tenant, kind, key), "tenant": tenant, "kind": kind, "key": key, "data": data}
            for kind, items in new.items() for key, data in sorted(items.items())
        ]

    @retry_commit
    def add(self, tenant: str, parser: CachedParser) -> int:
        """Store the parses ``parser`` made and kept; their number."""
        self.upsert(STATEMENT_PARSES, self._rows(tenant, {DOC: parser.new}))
        return len(parser.new)

    @retry_commit
    def keep_only(
        self, tenant: str, stored: dict[str, set[str]], used: dict[str, set[str]], new: dict[str, dict[str, bytes]]
    ) -> tuple[int, int]:
        """Store the new rows and drop the stored rows this run did not use: (written, removed)."""
        rows = self._rows(tenant, new)
        removed = 0
        for kind, keys in stored.items():  # by kind: a text's key is the same in the kinds of parse
            stale = sorted(keys - used.get(kind, set()))
            removed += len(stale)
            for start in range(0, len(stale), 500):
                part = stale[start:start + 500]
                self.delete(STATEMENT_PARSES, f"tenant = {sql_str(tenant)} AND kind = {sql_str(kind)} AND {sql_in('key', part)}")
        self.upsert(STATEMENT_PARSES, rows)
        return len(rows), removed


class StatementCache:
    """The stored parses and vectors of one tenant, for one supersession run."""

    def __init__(self, uri: str, tenant: str, nlp, embedder, keep: Callable[[str], bool]):
        self.store = ParseStore(uri)
        self.tenant = tenant
        stored = self.store.load(tenant)
        self.stored_keys = {kind: set(items) for kind, items in stored.items()}
        self.parser = CachedParser(nlp, stored[DOC], keep)
        self.embedder = CachedEmbedder(embedder, stored[VECTOR])

    def save(self) -> tuple[int, int]:
        """Write what this run parsed and embedded; drop what it no longer needs: (written, removed)."""
        return self.store.keep_only(
            self.tenant, self.stored_keys,
            {DOC: self.parser.used, VECTOR: self.embedder.used},
            {DOC: self.parser.new, VECTOR: self.embedder.new},
        )
