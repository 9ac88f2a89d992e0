"""Creating the entities a batch needs: literal and label names not found, and new clusters.

Planning is pure (which rows, with which name, kind and first date); inserting
is one statement, rows in lower(name) order so that concurrent batches take
the unique index's locks in one order. A conflict means another session won
the race: its row is then looked up with lower() on both sides, so a race
yields one entity, never two and never an error.
"""

from typing import Any, Dict, List, Optional, Tuple

import clustering
import db
import probe
from mentions import datetime_of

SQL_SIMILAR_PAIRS = """
SELECT a.i::int AS a, b.i::int AS b
  FROM unnest($1::text[]) WITH ORDINALITY AS a (k, i)
  JOIN unnest($1::text[]) WITH ORDINALITY AS b (k, i) ON a.i < b.i
 WHERE @trgm@.similarity(a.k, b.k) >= $2
"""

SQL_INSERT = """
WITH rows AS (
    SELECT r.name, r.kind, r.first_seen
      FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS r (name, kind, first_seen)
)
INSERT INTO entities (bank_id, canonical_name, entity_kind, first_seen, last_seen)
SELECT $1, rows.name, rows.kind, rows.first_seen, rows.first_seen
  FROM rows
 ORDER BY lower(rows.name)
ON CONFLICT (bank_id, lower(canonical_name)) DO NOTHING
RETURNING lower(canonical_name) AS key, id::text AS id, canonical_name, entity_kind
"""

# A row to insert: [name, kind, first date as text, its epoch].
Row = List[Any]


def new_forms(items, keys, epochs, dates, unresolved, skip_keys) -> Dict[str, Dict[str, Any]]:
    """The distinct new names of the regular mentions that found no entity, with spellings and dates."""
    forms: Dict[str, Dict[str, Any]] = {}
    for i in unresolved:
        if keys[i] in skip_keys:
            continue
        form = forms.setdefault(keys[i], {"key": keys[i], "spellings": {}, "first_seen": None,
                                          "_epoch": None, "_date": None})
        form["spellings"][items[i]["text"]] = form["spellings"].get(items[i]["text"], 0) + 1
        if epochs[i] is not None and (form["_epoch"] is None or epochs[i] < form["_epoch"]):
            form["_epoch"], form["_date"] = epochs[i], dates[i]
            form["first_seen"] = datetime_of(epochs[i])
    return forms


def similar_pairs(plpy, keys: List[str], threshold: float, max_names: int) -> List[Tuple[str, str]]:
    """Pairs of new names whose pg_trgm similarity reaches the clustering threshold."""
    if not 2 <= len(keys) <= max_names:
        return []
    rows = db.run(plpy, "similar", SQL_SIMILAR_PAIRS, ["text[]", "float8"], [keys, threshold])
    return [(keys[r["a"] - 1], keys[r["b"] - 1]) for r in rows]


def cluster(plpy, forms: Dict[str, Dict[str, Any]], cfg: Dict[str, Any]) -> Dict[str, clustering.Cluster]:
    """Group the new names of a batch (in-batch clustering); key -> its cluster."""
    if not forms:
        return {}
    keys = sorted(forms)
    pairs = similar_pairs(plpy, keys, cfg["intrabatch_similarity"], cfg["intrabatch_max_names"])
    return clustering.cluster_forms(
        [{"key": f["key"], "spellings": f["spellings"], "first_seen": f["first_seen"]}
         for f in forms.values()], pairs, cfg["intrabatch_max_names"])


def rows_to_insert(items, keys, epochs, dates, new_fixed: Dict[str, str], forms,
                   clusters: Dict[str, clustering.Cluster]) -> Dict[str, Row]:
    """One row per literal or label name not found, and one per cluster, with its earliest date."""
    rows: Dict[str, Row] = {}
    for i, it in enumerate(items):
        k = keys[i]
        if k not in new_fixed:
            continue
        entry = rows.get(k)
        if entry is None:
            # Literal and label names are created spelled exactly as given.
            rows[k] = [it["text"], new_fixed[k], dates[i], epochs[i]]
        elif epochs[i] is not None and (entry[3] is None or epochs[i] < entry[3]):
            entry[2], entry[3] = dates[i], epochs[i]
    for c in clusters.values():
        if c.key in rows:
            continue
        dated = [forms[m] for m in c.members if forms[m]["_epoch"] is not None]
        first = min(dated, key=lambda f: f["_epoch"]) if dated else None
        rows[c.key] = [c.name, "regular", first["_date"] if first else None,
                       first["_epoch"] if first else None]
    return rows


def insert(plpy, bank_id: str, rows: Dict[str, Row]) -> Tuple[Dict[str, probe.Hit], Dict[str, probe.Hit]]:
    """Insert the rows; return (created, taken): rows this call created, and rows a race winner did."""
    created: Dict[str, probe.Hit] = {}
    if not rows:
        return created, {}
    ordered = sorted(rows)
    for r in db.run(plpy, "insert", SQL_INSERT, ["text", "text[]", "text[]", "timestamptz[]"],
                    [bank_id, [rows[k][0] for k in ordered], [rows[k][1] for k in ordered],
                     [rows[k][2] for k in ordered]]):
        created[r["key"]] = (r["id"], r["canonical_name"], r["entity_kind"])
    lost = [k for k in ordered if k not in created]
    # Another session created these names first: take its rows.
    return created, probe.exact(plpy, bank_id, lost)
