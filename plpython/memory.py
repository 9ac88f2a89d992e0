"""Alias memory (lever alias_memory): a form the bank resolved with confidence resolves the same way again.

Without it the same string can drift: "J. Smith" scored against John Smith
today and against a Jane Smith created tomorrow may go to either. The rule
(docs/accuracy.md, measured in docs/evaluation.md):

* a form is remembered when a regular mention of it was resolved (scored, not
  created) with a score of at least MEMORY_MIN_SCORE, and every resolution of
  it in the bank, at any score, went to that one entity. A form the bank
  resolved to two entities names both as far as the bank knows: a "Pat
  Nguyen" placed on Patty by its score, before another was placed on Patrick
  with confidence, is no reason to send every later "Pat Nguyen" to Patrick
  (nor, on re-resolution, the first one);
* only forms of two words or more: a bare first name names several people by
  design (the bare_names lever decides it by context every time);
* a remembered form resolves to its entity directly (decision "memory"),
  unless the form is the entity's own name (resolution finds it anyway), or
  exactly the name of another entity the mention may mean, or the entity is
  of another type than the mention.

The memory is read from the provenance (mentions), not stored apart, so
forgetting a fact, merging and splitting keep it true. The resolutions of the
call itself count as well, so a batch remembers what fact-by-fact would.
Pure: no database.
"""

from typing import Any, Dict, Optional, Tuple

import probe
import words
from callstate import CallState
from settings import ALIAS_MEMORY, lever

MEMORY_MIN_SCORE = 0.9


def remembers(key: str, cfg: Dict[str, Any]) -> bool:
    """Whether the lever applies to a form at all."""
    return lever(cfg, ALIAS_MEMORY) and len(words.split_words(key)) >= 2


def remembered(key: str, mention_type: Optional[str], hits: Dict[str, Any], state: CallState,
               cfg: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
    """The entity a form resolves to by memory, as (id, canonical name, key), or None."""
    if not remembers(key, cfg):
        return None
    bank = probe.memory_hit(hits, key)
    known: Dict[str, Tuple[Optional[str], str, str, bool]] = dict(state.memory.get(key, {}))
    if bank is not None:
        if bank.entities > 1:
            return None
        _merge(known, bank.id, (bank.type, bank.name, bank.key, bank.confident))
    if len(known) != 1:
        return None
    entity, (etype, name, entity_key, confident) = next(iter(known.items()))
    if not confident:
        return None
    if entity_key == key:
        return None         # the entity's own name: resolution finds it as it is
    if mention_type is not None and etype is not None and etype != mention_type:
        return None
    named = probe.name_hit(hits, key, mention_type) or state.created_named(key, mention_type)
    if named is not None and named.id != entity:
        return None
    return entity, name, entity_key


def _merge(known: Dict[str, Tuple[Optional[str], str, str, bool]], entity: str,
           seen: Tuple[Optional[str], str, str, bool]) -> None:
    """Add an entity a form was resolved to; confident if any of its resolutions was."""
    before = known.get(entity)
    known[entity] = seen[:3] + (seen[3] or (before is not None and before[3]),)


def learn(state: CallState, key: str, score: Optional[float], entity: Tuple[str, Optional[str], str, str],
          cfg: Dict[str, Any]) -> None:
    """Count a scored resolution of the call (as the provenance will once written).

    ``entity``: (id, type, canonical name, key) of what it resolved to.
    """
    if score is not None and remembers(key, cfg):
        _merge(state.memory.setdefault(key, {}), entity[0], entity[1:] + (round(score, 6) >= MEMORY_MIN_SCORE,))
