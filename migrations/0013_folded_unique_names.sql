-- entity_resolver 0013: names and aliases are unique after folded(), and
-- every look-up by name uses that index, a bank-bound role's too.
-- Frozen once released: later changes go into a new numbered file.
--
-- Migration 0012 gave the resolver folded() (lower() declared LEAKPROOF) and
-- a btree over folded(canonical_name) beside the unique index over
-- lower(canonical_name). The corrections, explain's alias look-ups and the
-- client still compared lower(), which a bank-bound role cannot use through
-- an index (row-level security), and every new entity paid for two btrees
-- over the same folded name. folded() is lower() itself (the same built-in
-- function, the same collation), so a unique index over folded() keeps
-- exactly the same names apart: the unique indexes move to folded(), the
-- extra btree goes, and every comparison by name says folded().
--
-- explain_mention also shows a mention's label rows, which the trigram index
-- leaves out: it read every row of the table to find a bank's few labels
-- (half of its probe at 100,000 entities). A partial index holds them.

CREATE UNIQUE INDEX entities_bank_folded_name_key
ON {{ schema }}.entities (bank_id, {{ internal }}.folded(canonical_name), coalesce(entity_type, ''));

DROP INDEX {{ schema }}.entities_bank_lower_name_key;
DROP INDEX {{ schema }}.entities_folded_name_idx;

CREATE UNIQUE INDEX entity_aliases_bank_folded_alias_key
ON {{ schema }}.entity_aliases (bank_id, {{ internal }}.folded(alias));

DROP INDEX {{ schema }}.entity_aliases_bank_lower_alias_key;

CREATE INDEX entities_label_idx
ON {{ schema }}.entities (bank_id)
WHERE entity_kind = 'label';
