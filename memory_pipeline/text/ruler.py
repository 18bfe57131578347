"""The attribute ruler's matches found by a lookup per token instead of spaCy's ``Matcher``.

The English pipeline's ``attribute_ruler`` maps each tag to its part of speech and morphology and
fixes a few lemmas (``'m`` -> ``be``), with 180 patterns of one or two tokens. Its ``Matcher`` tries
every pattern at every token: over the 1,451 turns of the LoCoMo dev sessions that took about
1.3 s, more than the tagger and the parser together.

``fast_attribute_ruler`` gives the ruler a ``match`` that finds the same matches: a pattern is
filed under the values its first token asks for (a tag, a lowercase form, both, ...), each token
finds its candidates by its own values, and only their remaining tests are run. The ruler then
sorts and applies the matches as before
(``AttributeRuler.set_annotations``), so the documents are the same, token for token. A pattern
this lookup does not read (an operator such as ``+`` or ``?``, a predicate other than equality,
``IN``, ``NOT_IN`` and ``REGEX``, an attribute other than a token's text forms, tag, dependency
and ``IS_*`` flags) leaves the ruler on its ``Matcher``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from itertools import product
from operator import itemgetter

HASHED = ("ORTH", "LOWER", "NORM", "TAG", "DEP")  # attributes stored as the hash of a string


class _Unsupported(Exception):
    """A pattern the lookup does not read: the ruler keeps its ``Matcher``."""


def _string_id(value) -> int:
    from spacy.strings import get_string_id

    return get_string_id(value)


def _token_test(attr: str, value) -> tuple[list[int] | None, Callable[[int, Callable[[int], str]], bool]]:
    """One attribute's test of one pattern token, on the attribute's value (a hash or a flag;
    ``text`` gives the string of a hash, for ``REGEX``), with the values it accepts when it is a
    list of them (equality or ``IN``: what a pattern's first token is filed under), else None."""
    if isinstance(value, bool) or (attr.startswith("IS_") and isinstance(value, int)):
        if not attr.startswith("IS_"):
            raise _Unsupported(attr)
        flag = int(value)
        return [flag], lambda v, text: v == flag
    if attr not in HASHED:
        raise _Unsupported(attr)
    if isinstance(value, (str, int)):
        wanted = _string_id(value)
        return [wanted], lambda v, text: v == wanted
    if not isinstance(value, dict) or len(value) != 1:
        raise _Unsupported(f"{attr}: {value!r}")
    (op, arg), = value.items()
    if op == "IN":
        allowed = [_string_id(v) for v in arg]
        accepted = set(allowed)
        return allowed, lambda v, text: v in accepted
    if op == "NOT_IN":
        refused = {_string_id(v) for v in arg}
        return None, lambda v, text: v not in refused
    if op == "REGEX":
        pattern = re.compile(arg)
        return None, lambda v, text: bool(pattern.search(text(v)))
    raise _Unsupported(op)


class RulerLookup:
    """The ruler's patterns compiled for ``match``: see the module docstring.

    Each pattern is filed under the attributes its first token asks to equal a value (or one of a
    list: ``IN``) and those values; a token looks itself up under each such set of attributes,
    and only the tests left (the first token's other predicates, the next tokens') are run."""

    def __init__(self, ruler):
        from spacy.attrs import IDS

        self.strings = ruler.vocab.strings
        attrs: list[str] = []

        def column(attr: str) -> int:
            if attr not in IDS or attr == "OP":
                raise _Unsupported(attr)
            if attr not in attrs:
                attrs.append(attr)
            return attrs.index(attr)

        # {(columns): {(values): [(attr_id, match_id, length, [(offset, column, test)])]}}
        filed: dict[tuple[int, ...], dict[tuple[int, ...], list]] = defaultdict(lambda: defaultdict(list))
        for attr_id in range(len(ruler.attrs)):
            key = str(attr_id)
            for pattern in ruler.matcher.get(key)[1]:
                if not pattern or not all(isinstance(spec, dict) for spec in pattern):
                    raise _Unsupported(repr(pattern))
                filed_on, rest = {}, []
                for offset, spec in enumerate(pattern):
                    for attr, value in spec.items():
                        col, (wanted, test) = column(attr), _token_test(attr, value)
                        if offset == 0 and wanted is not None:
                            filed_on[col] = wanted
                        else:
                            rest.append((offset, col, test))
                cols = tuple(sorted(filed_on))
                entry = (attr_id, self.strings[key], len(pattern), rest)
                for values in product(*(filed_on[c] for c in cols)):
                    filed[cols][values].append(entry)
        self.columns = [IDS[a] for a in attrs]
        self.always = [entry for entries in filed.pop((), {}).values() for entry in entries]
        # A token's key under each set of columns (a value for one column, a tuple for several).
        self.lookups = [
            (itemgetter(*cols), {values[0] if len(cols) == 1 else values: entries for values, entries in by_values.items()})
            for cols, by_values in filed.items()
        ]

    def match(self, doc) -> list[tuple[int, int, int, int]]:
        """What ``AttributeRuler.match`` returns: (attr_id, match_id, start, end), sorted."""
        if not len(doc) or not self.columns:
            return []
        rows = doc.to_array(self.columns).reshape(len(doc), -1).tolist()
        text = self.strings.__getitem__
        found = set()
        n = len(rows)
        for start, row in enumerate(rows):
            candidates = [entry for key, by_key in self.lookups for entry in by_key.get(key(row), ())]
            for attr_id, match_id, length, rest in (candidates + self.always) if self.always else candidates:
                end = start + length
                if end <= n and (not rest or all(test(rows[start + offset][col], text) for offset, col, test in rest)):
                    found.add((attr_id, match_id, start, end))
        return sorted(found)


def fast_attribute_ruler(nlp) -> bool:
    """Give ``nlp``'s attribute ruler the lookup's ``match``; False (the ruler left as it was) when
    the pipeline has no ruler or one of its patterns is one the lookup does not read."""
    if "attribute_ruler" not in nlp.component_names:  # disabled or not
        return False
    ruler = nlp.get_pipe("attribute_ruler")
    try:
        lookup = RulerLookup(ruler)
    except _Unsupported:
        return False
    ruler.match = lookup.match
    return True
