"""In-batch clustering of new names (union-find), and the canonical choice.

A batch may introduce one new entity under several spellings ("Wren 🕯️" in
one fact, "Wren" in the next). Before insert, the new names are grouped so the
batch creates one entity, not three near-duplicates that the next batch would
have to choose between.

Keys are ``lower(text)`` computed by PostgreSQL; the similar pairs come from
pg_trgm in PostgreSQL. Standard library only.
"""

# No ``from __future__ import annotations``: see scoring.py (dataclasses and
# modules executed from a table row).

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional, Tuple

import words


@dataclass
class Form:
    """One distinct new name of a batch: its key, spellings with counts, earliest date."""

    key: str
    spellings: Dict[str, int] = field(default_factory=dict)
    first_seen: Optional[datetime] = None


@dataclass
class Cluster:
    """The entity a group of new forms becomes: canonical name and key, earliest date."""

    name: str
    key: str
    first_seen: Optional[datetime]
    members: Tuple[str, ...]


def _get(form: Any, attr: str) -> Any:
    """Read ``attr`` from a dict or an object."""
    if isinstance(form, dict):
        return form.get(attr)
    return getattr(form, attr, None)


def _utc_key(value: datetime) -> datetime:
    """Comparison key for datetimes that may mix aware and naive (naive read as UTC)."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _earliest(dates: Iterable[Optional[datetime]]) -> Optional[datetime]:
    """The earliest non-None date, or None."""
    present = [d for d in dates if d is not None]
    if not present:
        return None
    return min(present, key=_utc_key)


def _merge_forms(forms: Iterable[Any]) -> Dict[str, Form]:
    """Index forms by key, merging repeated keys (spelling counts add up)."""
    merged: Dict[str, Form] = {}
    for raw in forms:
        key = _get(raw, "key")
        form = merged.get(key)
        if form is None:
            form = merged[key] = Form(key)
        for spelling, count in (_get(raw, "spellings") or {}).items():
            form.spellings[spelling] = form.spellings.get(spelling, 0) + count
        form.first_seen = _earliest([form.first_seen, _get(raw, "first_seen")])
    return merged


def _canonical_order(form: Form) -> Tuple[Any, int, str]:
    """Sort key: most mentions first, then the shortest key, then the smallest."""
    # The form most facts used is the name people use; "Aster" written five
    # times beats "aster" written once. Length and code-point order only
    # break exact ties, so the choice never depends on input order.
    return (-sum(form.spellings.values()), len(form.key), form.key)


def _name_of(form: Form) -> str:
    """The form's spelling with the most mentions, then the smallest string."""
    if not form.spellings:
        return form.key
    return min(form.spellings.items(), key=lambda item: (-item[1], item[0]))[0]


def cluster_forms(forms: Iterable[Any], similar_pairs: Iterable[Tuple[str, str]],
                  max_names: int) -> Dict[str, Cluster]:
    """Group new forms joined by a similar, word-compatible pair; return key -> Cluster.

    ``forms`` are dicts or objects with ``key``, ``spellings`` (spelling ->
    mention count) and ``first_seen``. ``similar_pairs`` are the key pairs
    whose pg_trgm similarity reaches intrabatch_similarity. With fewer than 2
    or more than ``max_names`` distinct forms nothing is clustered. The result
    does not depend on the order of forms, of pairs, or within a pair.
    """
    merged = _merge_forms(forms)
    parent = {key: key for key in merged}

    def find(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]  # path halving
            key = parent[key]
        return key

    # Past intrabatch_max_names the pairwise pass is quadratic work for a
    # batch that is a bulk import, not a conversation; it is skipped.
    if 2 <= len(merged) <= max_names:
        for a, b in similar_pairs:
            if a == b or a not in merged or b not in merged:
                continue
            # The word check is order-sensitive on a tie in word count (the
            # first name must be covered); a pair has no first, so its keys
            # are taken in code-point order.
            if b < a:
                a, b = b, a
            root_a, root_b = find(a), find(b)
            if root_a == root_b:
                continue
            # Trigram similarity alone would join "dr john richardson" and
            # "dr jane richardson" (0.65): two people, kept apart by john/jane.
            if words.tokens_compatible(a, b):
                parent[root_b] = root_a

    groups: Dict[str, List[Form]] = {}
    for key, form in merged.items():
        groups.setdefault(find(key), []).append(form)

    result: Dict[str, Cluster] = {}
    for members in groups.values():
        canonical = min(members, key=_canonical_order)
        cluster = Cluster(
            name=_name_of(canonical),
            key=canonical.key,
            first_seen=_earliest(f.first_seen for f in members),
            members=tuple(sorted(f.key for f in members)),
        )
        for form in members:
            result[form.key] = cluster
    return result
