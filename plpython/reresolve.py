"""Re-resolution (reresolve, sql/058_reresolve.sql): one stored fact decided again by the resolver.

The fact's mentions as the application stored them (facts.mentions, with its
event_date) go through the pipeline of the facts trigger (resolve.resolve_call),
writing nothing. The SQL around this call takes the fact's own contribution out
of the bank first (its provenance, links and the statistics they made), so the
fact is decided as if it arrived now; it then compares these outcomes with the
provenance and moves what changed. There is no second resolver here.
"""

import json
import uuid
from collections import Counter

import db
import probe
import resolve
from facts import fact_elements
from mentions import datetime_of
from scoring import Candidate

# The fact as stored, as the trigger receives it (texts, sql/040_write_path.sql).
SQL_FACT = """
SELECT f.mentions::text AS mentions, f.event_date::text AS event_date
  FROM facts AS f
 WHERE f.bank_id = $1 AND f.id = $2
"""


def decide_fact_sql(plpy, bank_id, unit_id):
    """_reresolve_fact: per mention of the fact, in order, what the resolver decides now.

    Rows (ordinal, entity_id, canonical_name, created, score, decision,
    untold, leaning, by_score); a mention that would create an entity has no
    entity_id (the id resolution would draw is not an entity of the bank).
    untold: the bare entity (or an initial's) took the mention as nothing told
    apart the entities its name fits; leaning: the one of them the context
    leaned to; by_score: nothing told them apart and no bare entity holds the
    mention, so the best score chose one of them.
    """
    return _decide(plpy, bank_id, unit_id, None)


def _decide(plpy, bank_id, unit_id, prober):
    rows = db.run(plpy, "reresolve_fact", SQL_FACT, ["text", "uuid"], [bank_id, unit_id])
    if not rows:
        return []
    fact = resolve.Fact(unit_id, [], rows[0]["event_date"], elements=fact_elements(rows[0]["mentions"]))
    outcomes = resolve.resolve_call(plpy, bank_id, [fact], None, write=False, prober=prober)[0]
    return [(n + 1, None if o.created else o.entity_id, o.canonical_name, o.created, o.score, o.decision, o.untold,
             o.leaning, o.by_score) for n, o in enumerate(outcomes)]


# -- the plan's probes, once per name ------------------------------------------------
#
# A plan (_reresolve_plan) decides every fact of a bank in one statement, and
# the trigram probe of a fact's names was half of its decision's time (2.5 of
# 5.1 ms at 10,000 entities). Between two facts of a plan no entity is created
# or renamed: moves make none, the resolver writes nothing, and the plan holds
# the bank's lock. An entity can only go (an orphan a move leaves, or the one
# a fact's left-out removes until it is put back). So a name's probe, read
# once, stays its probe less the entities gone since, while it was not cut
# at the limit: the entities still there are read again by id for their
# last_seen, which the left-outs and the moves recount. A probe made while
# the fact's left-out had removed an entity is used but not kept (that
# entity comes back).

SQL_LAST_SEEN = """
SELECT e.id::text AS id, extract(EPOCH FROM e.last_seen)::float8 AS last_seen
  FROM entities AS e
 WHERE e.bank_id = $1 AND e.id = ANY($2::uuid[])
"""

# One plan's probes: (plan id, bank) -> {(key, narrow, limit): [(id, key, sim, type, homonym)]}, and the names.
_MEMO = {"plan": None, "probes": {}, "names": {}}


class PlanProber:
    """probe.candidates_and_identical for one fact of a plan, answered from the plan's memo where it can."""

    def __init__(self, plan_id, bank_id, keep):
        if _MEMO["plan"] != (plan_id, bank_id):
            _MEMO.update(plan=(plan_id, bank_id), probes={}, names={})
        self.keep = keep

    def __call__(self, plpy, bank_id, keys, narrow, limit):
        probes, names = _MEMO["probes"], _MEMO["names"]
        wanted = [(k, False, limit) for k in keys] + [(k, True, limit) for k in narrow]
        known = [w for w in wanted if w in probes]
        ids = sorted({row[0] for w in known for row in probes[w]})
        seen = {}
        if ids:
            seen = {r["id"]: r["last_seen"]
                    for r in db.run(plpy, "reresolve_last_seen", SQL_LAST_SEEN, ["text", "uuid[]"], [bank_id, ids])}
        found = {}
        for w in known:
            rows = [row for row in probes[w] if row[0] in seen]
            # Cut at the limit and short of an entity gone: the next one is unknown.
            if len(rows) == len(probes[w]) or len(probes[w]) < limit:
                found[w] = [Candidate(i, key, sim, datetime_of(seen[i]), entity_type=t, homonym=h)
                            for i, key, sim, t, h in rows]
        missing = [w for w in wanted if w not in found]
        if missing:
            fresh_full, fresh_narrow, fresh_names = probe.candidates_and_identical(
                plpy, bank_id, [k for k, n, _ in missing if not n], [k for k, n, _ in missing if n], limit)
            if self.keep:
                names.update(fresh_names)
            for w in missing:
                cands = (fresh_narrow if w[1] else fresh_full)[w[0]]
                found[w] = cands
                if self.keep:
                    probes[w] = [(c.id, c.key, c.trigram_similarity, c.entity_type, c.homonym) for c in cands]
        else:
            fresh_names = {}
        out_names = {c.id: fresh_names.get(c.id) or names[c.id] for cands in found.values() for c in cands}
        return ({k: found[(k, False, limit)] for k in keys}, {k: found[(k, True, limit)] for k in narrow}, out_names)


def decide_plan_fact_sql(plpy, bank_id, unit_id, plan_id, keep):
    """_reresolve_fact(bank_id, unit_id, plan_id, keep): decide_fact_sql with the plan's probes (PlanProber).

    ``keep``: the fact's left-out removed no entity, so its probes may be kept.
    """
    return _decide(plpy, bank_id, unit_id, PlanProber(plan_id, bank_id, keep))


# -- a replay in event order (the bank setting reresolve_replay) ----------------------
#
# A bank's partition depends on the order its facts arrived: a bare "Alex"
# stored before Alex Kim was known made an entity of its own, two people of one
# name met in one order share an entity and in another do not. Deciding each
# fact again against the bank as it stands keeps most of that history (every
# entity the arrival made is still there to be found). A replay does not:
# every fact of the bank decided again from nothing, in event order, as if the
# facts had arrived in the order they happened (_reresolve_replay, rolled
# back). Its clusters are then placed on the entities the bank holds, so that
# identity is kept where it can be: each cluster on the entity holding most of
# its mentions, the largest overlaps first, each entity once (map_clusters);
# an entity the replay kept (one an operator made or named, which the replay
# does not remove) is its own cluster's. A cluster no entity is left for gets
# one of its own, made as the replay made it (_reresolve_create). An entity
# a cluster is placed on takes the replay's name, unless an operator named it
# (curated) or another entity holds that name: the arrival's name is part of
# the arrival ("Lincoln" for Lincoln Hayes, met bare first), and every later
# decision reads it (_reresolve_rename).

SQL_PLACED = """
SELECT m.unit_id::text AS unit_id, m.ordinal, m.entity_id::text AS entity_id, e.canonical_name, e.curated
  FROM mentions AS m
 INNER JOIN entities AS e ON m.bank_id = e.bank_id AND m.entity_id = e.id
 WHERE m.bank_id = $1 AND m.unit_id = ANY($2::uuid[])
"""

SQL_KEPT = """
SELECT e.id::text AS id FROM entities AS e WHERE e.bank_id = $1 AND e.id = ANY($2::uuid[])
"""

# The id of an entity a replay makes is drawn from its first mention (bank,
# unit, ordinal), not at random: a dry run and the apply after it make the
# same plan, and a second reresolve finds the same ids. Never an id the bank
# has used: an entity's, one merged away (its forward stands for the entity
# it became) or one in the ledger (an undo may bring it back).
SQL_USED = """
SELECT EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = $1 AND e.id = $2)
    OR EXISTS (SELECT 1 FROM entity_forwards AS f WHERE f.bank_id = $1 AND (f.old_id = $2 OR f.new_id = $2))
    OR EXISTS (SELECT 1 FROM operations AS o WHERE o.bank_id = $1 AND $2 = ANY(o.entity_ids)) AS used
"""
_MADE = uuid.UUID("6f1c2a4e-2b1d-5d3e-9a57-6e7265736f6c")


def made_id(bank_id, unit, ordinal, taken):
    """The id for an entity a replay makes, first met at (unit, ordinal): the first of its ids for
    which ``taken(id)`` is false (an entity of the bank may hold one, made by an earlier plan)."""
    n = 0
    while True:
        candidate = str(uuid.uuid5(_MADE, "%s\x00%s\x00%s\x00%d" % (bank_id, unit, ordinal, n)))
        if not taken(candidate):
            return candidate
        n += 1


def map_clusters(placed, replayed, kept=()):
    """The entity each replayed cluster is placed on: {cluster: entity}.

    placed: {(unit, ordinal): entity} (where the mentions are); replayed:
    {(unit, ordinal): cluster} (where the replay put them), in the replay's
    order; kept: clusters that are entities of the bank, each placed on itself.
    The pairs of most mentions in common first; of as many, the larger entity,
    then the cluster and the entity with the earliest mention in the replay's
    order: no tie is broken by an id, which the order of arrival drew. A
    cluster and an entity are each placed once.
    """
    out = {c: c for c in kept}
    taken = set(out)
    overlap = Counter((replayed[k], e) for k, e in placed.items() if k in replayed)
    size = Counter(placed.values())
    first = {}
    for n, k in enumerate(replayed):
        first.setdefault(replayed[k], n)
        if k in placed:
            first.setdefault(("entity", placed[k]), n)
    order = sorted(overlap.items(), key=lambda x: (-x[1], -size[x[0][1]], first[x[0][0]], first[("entity", x[0][1])]))
    for (cluster, entity), _ in order:
        if cluster not in out and entity not in taken:
            out[cluster] = entity
            taken.add(entity)
    return out


def replay_decided_sql(plpy, bank_id, replay):
    """_reresolve_replay_decided: a replay (_reresolve_replay's) as each fact's decisions, placed.

    Returns {"units": {unit_id: {"decided": [rows as _reresolve_fact's], "left_out": []}}, "create":
    [entity rows], "rename": [entity rows]} as JSON: a cluster placed on no entity goes to an entity of
    its own, made from the replay's row of it (create); an entity a cluster is placed on takes the
    replay's name unless curated (rename).
    """
    replay = json.loads(replay) if replay else {}
    rows = replay.get("mentions") or []
    made = {e["id"]: e for e in replay.get("entities") or []}
    units = sorted({r[0] for r in rows})
    placed, names, curated = {}, {}, set()
    for r in db.run(plpy, "reresolve_placed", SQL_PLACED, ["text", "uuid[]"], [bank_id, units]) if units else []:
        placed[(r["unit_id"], r["ordinal"])] = r["entity_id"]
        names[r["entity_id"]] = r["canonical_name"]
        if r["curated"]:
            curated.add(r["entity_id"])
    kept = [r["id"] for r in db.run(plpy, "reresolve_kept", SQL_KEPT, ["text", "uuid[]"], [bank_id, sorted(made)])]
    mapping = map_clusters(placed, {(r[0], r[1]): r[2] for r in rows}, kept)
    create = []

    def taken(candidate):
        return candidate in mapping.values() or db.run(
            plpy, "reresolve_used", SQL_USED, ["text", "uuid"], [bank_id, candidate])[0]["used"]

    for unit, ordinal, cluster, _, _ in rows:
        if cluster not in mapping:
            mapping[cluster] = made_id(bank_id, unit, ordinal, taken)
            # A homonym of the replay's is one here too (its id is its homonym mark).
            homonym = mapping[cluster] if made[cluster].get("homonym") else None
            create.append(dict(made[cluster], id=mapping[cluster], homonym=homonym))
    rename = []
    for cluster, entity in sorted(mapping.items(), key=lambda x: x[1]):
        row = made.get(cluster)
        if entity == cluster or entity not in names or entity in curated or row is None:
            continue
        if names[entity] != row["canonical_name"]:
            rename.append({"id": entity, "canonical_name": row["canonical_name"]})
    out = {}
    for unit, ordinal, cluster, decision, score in rows:
        entity = mapping[cluster]
        out.setdefault(unit, []).append({
            "ordinal": ordinal, "entity_id": entity, "canonical_name": names.get(entity) or made[cluster]["canonical_name"],
            "created": False, "score": score, "decision": decision,
            "untold": False, "leaning": None, "by_score": False})
    return json.dumps({"units": {u: {"decided": sorted(d, key=lambda x: x["ordinal"]), "left_out": []}
                                 for u, d in out.items()}, "create": create, "rename": rename})
