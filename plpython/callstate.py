"""What the earlier facts of a call did, as later facts of the same call must see it.

A call resolves its facts in order (the rows of an INSERT, as the caller
wrote them). The bank is read once, before the first fact; this state holds
everything the call has decided since: the entities it created (with their
trigrams, so a later mention can find them as pg_trgm would), the event dates
it added to entities, the pairs its facts formed, and the rows to write at the
end. A later fact's candidates, recency and co-occurrence are the bank's
combined with this state, so a statement of many facts decides exactly as one
statement per fact would. Pure: no database.
"""

import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

from scoring import Candidate


class Entity(NamedTuple):
    """An entity the call created (its id provisional until written)."""

    id: str
    key: str
    name: str
    kind: str
    type: Optional[str]
    homonym: bool = False   # created beside an entity of its name that an attribute ruled out


def pair(a: str, b: str) -> Tuple[str, str]:
    """An unordered pair as the bank stores it: the smaller id first (uuid order = text order)."""
    return (a, b) if a < b else (b, a)


class CallState:
    """The overlay of one call (see the module docstring)."""

    def __init__(self, near: Optional[Dict[str, List[Tuple[str, float]]]] = None) -> None:
        self.created: Dict[str, List[Entity]] = {}    # key -> entities created by the call (one per type)
        self.by_id: Dict[str, Entity] = {}
        # The call's keys within probe reach of each other (trigrams.neighbours):
        # an entity the call creates is one of its keys.
        self.near = near or {}
        self.latest: Dict[str, float] = {}            # entity id -> latest event epoch of the call
        self.earliest: Dict[str, float] = {}
        self.neighbours: Dict[str, Set[str]] = {}     # entity id -> partners the call added
        self.pairs: Dict[Tuple[str, str], int] = {}   # pairs the call's units formed
        self.first_dates: Dict[str, Tuple[Optional[float], Optional[str]]] = {}
        # (unit, ordinal, text, entity, decision, score, date, attributes as JSON)
        self.provenance: List[Tuple[Any, ...]] = []
        self.links: List[Tuple[str, str, Optional[str]]] = []   # (unit, entity, date)
        self.mentions: Dict[str, List[Any]] = {}      # entity -> [count, latest epoch, date, earliest epoch, date]
        # key (folded canonical name) <-> id of every entity a fact of the call
        # went to (the only entities the call's pairs involve)
        self.seen_keys: Dict[str, Set[str]] = {}
        self.key_of: Dict[str, str] = {}
        self.lost: Set[str] = set()                   # provisional ids another session's entity replaced
        # alias memory (memory.py): form -> {entity id: (type, name, key,
        # confident)} it was resolved to, confident if once with the score
        # memory asks for
        self.memory: Dict[str, Dict[str, Tuple[Optional[str], str, str, bool]]] = {}
        # How many entities the bank held before the call, as far as it asked
        # (probe.BankSize; None: not asked yet).
        self.bank_size: Optional[Any] = None
        # What the facts' contexts read (probe.context): nearby key -> its
        # entities, and their degrees in the bank, which do not change during
        # a call.
        self.context_read: Tuple[Dict[str, Set[str]], Dict[str, int]] = ({}, {})
        # Attributes: what the call's mentions added to entities (entity id ->
        # name -> values), and the bank's values it read (entity id -> the same).
        self.held: Dict[str, Dict[str, Set[str]]] = {}
        self.bank_held: Dict[str, Dict[str, Set[str]]] = {}
        self.judged: Dict[Tuple[str, str], bool] = {}   # (a, b), a < b -> judged distinct (resolve.judged)
        self.held_as: Dict[str, Tuple[str, str]] = {}     # entity id -> (canonical name, key)
        # Items whose decision attributes qualified: item index -> "ambiguous"
        # (provenance says so), and the items that create a homonym.
        self.flags: Dict[int, str] = {}
        self.homonyms: Set[int] = set()

    # -- entities ----------------------------------------------------------------

    def create(self, key: str, name: str, kind: str, etype: Optional[str],
               epoch: Optional[float], date: Optional[str], homonym: bool = False) -> Entity:
        """Register a new entity (a fresh id) and make it findable by later facts."""
        ent = Entity(str(uuid.uuid4()), key, name, kind, etype, homonym)
        self.created.setdefault(key, []).append(ent)
        self.by_id[ent.id] = ent
        self.meet(ent.id, key)
        self.first_dates[ent.id] = (epoch, date)
        return ent

    def entities_created(self) -> int:
        """How many entities the call has created so far."""
        return len(self.by_id)

    def created_candidates(self, key: str) -> List[Candidate]:
        """Entities the call created whose similarity to a key reaches the probe threshold."""
        if not self.created:
            return []
        out = []
        for other, sim in self.near.get(key, ()):
            for ent in self.created.get(other, ()):
                # Label rows are never fuzzy candidates.
                if ent.kind != "label":
                    out.append(Candidate(ent.id, other, sim, None, entity_type=ent.type, homonym=ent.homonym))
        return out

    def created_named(self, key: str, etype: Optional[str]) -> Optional[Entity]:
        """The entity the call created with this exact name, for a mention of this type (as name_hit)."""
        ents = self.created.get(key, ())
        if etype is None:
            return ents[0] if ents else None
        return next((e for e in ents if e.type == etype), None) or next((e for e in ents if e.type is None), None)

    def meet(self, entity_id: str, key: str) -> None:
        self.seen_keys.setdefault(key, set()).add(entity_id)
        self.key_of[entity_id] = key

    def is_new(self, entity_id: str) -> bool:
        return entity_id in self.by_id

    # -- attributes --------------------------------------------------------------

    def hold(self, entity_id: str, values: Optional[Dict[str, str]], name: str, key: str) -> None:
        """A mention of the call gave the entity (named ``name``) these (normalised) attributes."""
        if values:
            self.held_as[entity_id] = (name, key)
        for name, value in (values or {}).items():
            self.held.setdefault(entity_id, {}).setdefault(name, set()).add(value)

    def values_of(self, entity_id: str) -> Dict[str, Set[str]]:
        """Every value the entity holds as far as the call knows: the bank's (as read) and the call's."""
        out = {k: set(v) for k, v in self.bank_held.get(entity_id, {}).items()}
        for name, values in self.held.get(entity_id, {}).items():
            out.setdefault(name, set()).update(values)
        return out

    def holders_of(self, name: str, value: str) -> Set[str]:
        """The entities the call gave this value."""
        return {e for e, held in self.held.items() if value in held.get(name, ())}

    # -- statistics --------------------------------------------------------------

    def last_seen_epoch(self, entity_id: str) -> Optional[float]:
        return self.latest.get(entity_id)

    def partners_of(self, entity_id: str) -> Set[str]:
        return self.neighbours.get(entity_id, set())

    def record_mention(self, entity_id: str, epoch: Optional[float], date: Optional[str]) -> None:
        entry = self.mentions.setdefault(entity_id, [0, None, None, None, None])
        entry[0] += 1
        if epoch is not None:
            if entry[1] is None or epoch > entry[1]:
                entry[1], entry[2] = epoch, date
            if entry[3] is None or epoch < entry[3]:
                entry[3], entry[4] = epoch, date
            if entity_id not in self.latest or epoch > self.latest[entity_id]:
                self.latest[entity_id] = epoch

    def record_unit(self, unit_id: str, entity_ids: List[str], date: Optional[str],
                    members: Tuple[str, ...] = ()) -> None:
        """Link a unit to its entities; each pair with a newly linked side counts once."""
        old = set(members)
        new = [e for e in dict.fromkeys(entity_ids) if e not in old]
        for e in new:
            self.links.append((unit_id, e, date))
        everyone = list(old) + new
        for i, a in enumerate(everyone):
            for b in everyone[i + 1:]:
                if a in old and b in old:
                    continue
                p = pair(a, b)
                self.pairs[p] = self.pairs.get(p, 0) + 1
                self.neighbours.setdefault(a, set()).add(b)
                self.neighbours.setdefault(b, set()).add(a)

    # -- writing -----------------------------------------------------------------

    def remap(self, mapping: Dict[str, str]) -> None:
        """Replace provisional ids that lost a race to another session's entity."""
        if not mapping:
            return
        self.lost.update(mapping)
        # Another session created the name first: these mentions found it.
        self.provenance = [row[:3] + (mapping[row[3]], "resolved" if row[4] == "created" else row[4]) + row[5:]
                           if row[3] in mapping else row for row in self.provenance]
        self.links = [(u, mapping.get(e, e), d) for u, e, d in self.links]
        merged: Dict[str, List[Any]] = {}
        for e, entry in self.mentions.items():
            target = mapping.get(e, e)
            into = merged.get(target)
            if into is None:
                merged[target] = list(entry)
                continue
            into[0] += entry[0]
            if entry[1] is not None and (into[1] is None or entry[1] > into[1]):
                into[1], into[2] = entry[1], entry[2]
            if entry[3] is not None and (into[3] is None or entry[3] < into[3]):
                into[3], into[4] = entry[3], entry[4]
        self.mentions = merged
