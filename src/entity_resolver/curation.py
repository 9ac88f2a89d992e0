"""Apply an export's curation to the bank it is imported into.

An export (:mod:`entity_resolver.exporter`) gives every mention its entity as
``gold`` and, on the line where an entity first appears, its canonical name
and aliases (``entities``). After the importer has inserted the facts (which
the resolver resolves afresh), :meth:`Curation.apply` makes the bank agree
with the file, through the operator corrections (each one ledgered in the new
bank, each one undoable there):

1. an entity whose mentions carry several golds is split (``split_entity``),
   one gold staying, the others' facts moving to new entities;
2. the entities of one gold are merged (``merge_entities``);
3. the entities of mentions without gold (forgotten in the exported bank) are
   forgotten (``forget_entity``);
4. names and aliases are made the file's: aliases not in the file removed
   (``remove_alias``), names changed (``rename_entity``, through a temporary
   name so that two entities may swap names), missing aliases added
   (``add_alias``);
5. the pairs the file judges distinct are marked distinct (``mark_distinct``,
   with the judgement's reason), but for those the bank already holds (a
   re-run of the import).

What cannot be reproduced is counted in ``unreproduced``: a fact holding
mentions of two golds that the resolver gave one entity (a split moves whole
facts), label entities (corrected in the vocabulary, not here), entities with
no mention in the file, and judgements on such an entity (or on two golds
that are one entity here). Entity ids are new: ``forwards`` of the file are
not carried over (ids of the exported bank mean nothing in the new one).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import psycopg
from psycopg import sql

# A mention's place: (unit id, ordinal from 1).
Place = Tuple[uuid.UUID, int]


class Curation:
    """The golds and entity records of an imported file, bank by bank, and their application."""

    def __init__(self) -> None:
        self.golds: Dict[str, Dict[Place, Optional[str]]] = defaultdict(dict)
        self.entities: Dict[str, Dict[str, Dict[str, Any]]] = defaultdict(dict)

    def watch(self, records: Iterable[Any]) -> Iterator[Any]:
        """Pass the importer's records through, keeping what the curation needs."""
        for rec in records:
            golds = self.golds[rec.bank_id]
            for ordinal, gold in enumerate(rec.golds, 1):
                golds[(rec.unit_id, ordinal)] = gold
            self.entities[rec.bank_id].update(rec.entities)
            yield rec

    def apply(self, conn: psycopg.Connection, schema: str) -> Dict[str, Any]:
        """Make each bank's entities the file's (module docstring); returns what was done."""
        done: Counter = Counter()
        refused: List[str] = []
        for bank in sorted(self.golds):
            _Bank(conn, schema, bank, self.golds[bank], self.entities[bank], done, refused).run()
        return {**{k: done[k] for k in ("splits", "merges", "forgotten", "renames", "aliases_added",
                                        "aliases_removed", "judgements", "unreproduced")},
                "refused": refused}


class _Bank:
    def __init__(self, conn: psycopg.Connection, schema: str, bank: str, golds: Dict[Place, Optional[str]],
                 entities: Dict[str, Dict[str, Any]], done: Counter, refused: List[str]) -> None:
        self.conn, self.s, self.bank = conn, sql.Identifier(schema), bank
        self.golds, self.entities, self.done, self.refused = golds, entities, done, refused

    # -- reading ------------------------------------------------------------------

    def _mentions(self) -> Dict[uuid.UUID, List[Tuple[Place, Optional[str]]]]:
        """Each regular entity of the file's mentions: its mentions (place, gold)."""
        units = sorted({u for u, _ in self.golds})
        out: Dict[uuid.UUID, List[Tuple[Place, Optional[str]]]] = defaultdict(list)
        rows = self.conn.execute(sql.SQL(
            "SELECT m.unit_id, m.ordinal, m.entity_id, e.entity_kind FROM {s}.mentions AS m"
            " JOIN {s}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
            " WHERE m.bank_id = %s AND m.unit_id = ANY(%s::uuid[])").format(s=self.s), (self.bank, units))
        for unit, ordinal, entity, kind in rows:
            place = (unit, ordinal)
            if place not in self.golds:
                continue
            if kind == "label":
                continue
            out[entity].append((place, self.golds[place]))
        return out

    def _row(self, entity: uuid.UUID) -> Tuple[str, List[str]]:
        name = self.conn.execute(sql.SQL("SELECT canonical_name FROM {s}.entities WHERE bank_id = %s AND id = %s")
                                 .format(s=self.s), (self.bank, entity)).fetchone()[0]
        aliases = [a for (a,) in self.conn.execute(sql.SQL(
            "SELECT alias FROM {s}.entity_aliases WHERE bank_id = %s AND entity_id = %s ORDER BY alias")
            .format(s=self.s), (self.bank, entity))]
        return name, aliases

    # -- correcting ---------------------------------------------------------------

    def _correct(self, what: str, function: str, *args: Any) -> Optional[Dict[str, Any]]:
        """One correction in its own transaction; a refusal is counted, not raised."""
        query = sql.SQL("SELECT {s}.{f}({args})").format(
            s=self.s, f=sql.Identifier(function), args=sql.SQL(", ").join([sql.Placeholder()] * len(args)))
        try:
            with self.conn.transaction():
                return self.conn.execute(query, args).fetchone()[0]
        except psycopg.Error as exc:
            if not exc.sqlstate or exc.sqlstate[:2] not in ("22", "23"):
                raise
            self.done["unreproduced"] += 1
            self.refused.append(f"{self.bank}: {what}: {exc.sqlstate}: {exc.diag.message_primary}")
            return None

    def _temporary_name(self) -> str:
        return f"import {uuid.uuid4()}"

    def run(self) -> None:
        self._split()
        self._merge_and_forget()
        self._names()
        self._judgements()

    def _split(self) -> None:
        for entity, mentions in self._mentions().items():
            count = Counter(g for _, g in mentions)
            if len(count) < 2:
                continue
            # The gold with most mentions stays (ties: the smaller gold, None last).
            stay = sorted(count, key=lambda g: (-count[g], g is None, g or ""))[0]
            staying_units = {p[0] for p, g in mentions if g == stay}
            moving: Dict[Optional[str], Set[uuid.UUID]] = defaultdict(set)
            taken: Set[uuid.UUID] = set()
            for (unit, _), gold in sorted(mentions, key=lambda m: (m[0][0], m[0][1])):
                if gold == stay:
                    continue
                if unit in staying_units or (unit in taken and unit not in moving.get(gold, ())):
                    self.done["unreproduced"] += 1     # a split moves the entity's mentions of whole facts
                    continue
                moving[gold].add(unit)
                taken.add(unit)
            for gold in sorted(moving, key=lambda g: (g is None, g or "")):
                if self._correct("split", "split_entity", self.bank, entity, sorted(moving[gold]),
                                 self._temporary_name()):
                    self.done["splits"] += 1

    def _merge_and_forget(self) -> None:
        by_gold: Dict[Optional[str], List[Tuple[int, uuid.UUID]]] = defaultdict(list)
        for entity, mentions in self._mentions().items():
            golds = {g for _, g in mentions}
            if len(golds) == 1:
                by_gold[golds.pop()].append((len(mentions), entity))
        for gold, held in sorted(by_gold.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
            held.sort(key=lambda h: (-h[0], str(h[1])))
            if gold is None:
                for _, entity in held:
                    if self._correct("forget", "forget_entity", self.bank, entity):
                        self.done["forgotten"] += 1
            elif len(held) > 1:
                if self._correct("merge", "merge_entities", self.bank, [e for _, e in held[1:]], held[0][1]):
                    self.done["merges"] += 1
        self.final = {gold: held[0][1] for gold, held in by_gold.items() if gold is not None}

    def _names(self) -> None:
        # The entity of each gold the file describes, after the merges.
        targets = {}
        for gold, record in self.entities.items():
            entity = self.final.get(gold)
            if entity is None:
                self.done["unreproduced"] += 1         # no mention of it in the file, or not one entity
                continue
            targets[entity] = record
        self._remove_aliases(targets)
        renamed = [e for e, r in targets.items() if self._row(e)[0] != r["name"]]
        for entity in renamed:                     # through a free name: two entities may swap names
            self._correct("rename", "rename_entity", self.bank, entity, self._temporary_name())
        self._remove_aliases(targets)
        for entity in renamed:
            if self._correct("rename", "rename_entity", self.bank, entity, targets[entity]["name"]):
                self.done["renames"] += 1
        self._remove_aliases(targets)
        for entity, record in targets.items():
            present = set(self._row(entity)[1])
            for alias in record["aliases"]:
                if alias not in present and self._correct("alias", "add_alias", self.bank, entity, alias):
                    self.done["aliases_added"] += 1

    def _remove_aliases(self, targets: Dict[uuid.UUID, Dict[str, Any]]) -> None:
        for entity, record in targets.items():
            wanted = set(record["aliases"])
            for alias in self._row(entity)[1]:
                if alias not in wanted and self._correct("unalias", "remove_alias", self.bank, alias):
                    self.done["aliases_removed"] += 1

    def _judgements(self) -> None:
        standing = {frozenset(pair) for pair in self.conn.execute(sql.SQL(
            "SELECT entity_a, entity_b FROM {s}.list_judgements(%s)").format(s=self.s), (self.bank,))}
        for gold, record in sorted(self.entities.items()):
            for other, reason in record["distinct"]:
                pair = (self.final.get(gold), self.final.get(other))
                if None in pair:
                    self.done["unreproduced"] += 1     # one of the two has no entity of its own here
                elif frozenset(pair) not in standing and self._correct(
                        "distinct", "mark_distinct", self.bank, *pair, reason):
                    self.done["judgements"] += 1
                    standing.add(frozenset(pair))
