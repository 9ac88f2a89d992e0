-- entity_resolver 0018: mention attributes and homonyms (issue 31).
-- Frozen once released: later changes go into a new numbered file.
--
-- * mentions.attributes: what a mention said about its entity besides its
--   name ("birth_date", "email"), normalised (plpython/attributes.py). The
--   provenance is the one record of them: the entity_attributes view derives
--   each entity's from it, so merge, split, forget, undo and re-resolution,
--   which move or delete provenance rows, carry them without a rule of their
--   own, and a rebuild has nothing to rebuild.
-- * Two indexes serve the resolver: the entities holding an identifying
--   value (GIN over the attributes), and the attributes of a few candidate
--   entities (only the provenance rows that carry any).
-- * entities.homonym: an entity the resolver created because a distinguishing
--   attribute ruled out every entity of its name (two people called Maria
--   Schmidt, born years apart). It holds its own id there, which keeps it
--   apart in the unique index of names; the first entity of a name holds
--   NULL, so the index still refuses a second one made by a race.
-- * Two decision codes: identifier (an identifying value one entity holds)
--   and ambiguous (identifying values held by several entities, or by one a
--   distinguishing value rules out: placed by the documented rule instead).

ALTER TABLE {{ schema }}.mentions ADD COLUMN attributes jsonb;

ALTER TABLE {{ schema }}.mentions ADD CONSTRAINT mentions_attributes CHECK (
    attributes IS NULL OR jsonb_typeof(attributes) = 'object'
);

COMMENT ON COLUMN {{ schema }}.mentions.attributes IS
'What the mention said about its entity besides its name, normalised ({"birth_date": "1961-05-03"}); NULL: nothing.';

CREATE INDEX mentions_attributes_idx
ON {{ schema }}.mentions USING gin (attributes jsonb_path_ops)
WHERE attributes IS NOT NULL;

CREATE INDEX mentions_attributed_idx
ON {{ schema }}.mentions (bank_id, entity_id)
WHERE attributes IS NOT NULL;

ALTER TABLE {{ schema }}.mentions DROP CONSTRAINT mentions_decision;
ALTER TABLE {{ schema }}.mentions ADD CONSTRAINT mentions_decision CHECK (
    decision IN ('resolved', 'created', 'literal', 'label', 'alias', 'operator', 'memory', 'identifier', 'ambiguous')
);

COMMENT ON COLUMN {{ schema }}.mentions.decision IS
'How: resolved (scored), created (new entity), literal (resolve = false), label, alias (exact alias hit), '
'memory (a form resolved before with confidence), identifier (an identifying attribute one entity holds), '
'ambiguous (attributes pointed at several entities: placed by name and context), operator (moved by a correction).';

ALTER TABLE {{ schema }}.entities ADD COLUMN homonym uuid;

ALTER TABLE {{ schema }}.entities ADD CONSTRAINT entities_homonym CHECK (homonym IS NULL OR homonym = id);

COMMENT ON COLUMN {{ schema }}.entities.homonym IS
'Its own id when created as a homonym (another entity of the bank has its name and type), else NULL.';

-- The same name, one more column (the look-ups by name use its prefix).
DROP INDEX {{ schema }}.entities_bank_folded_name_key;

CREATE UNIQUE INDEX entities_bank_folded_name_key
ON {{ schema }}.entities (
    bank_id,
    {{ internal }}.folded(canonical_name),
    coalesce(entity_type, ''),
    coalesce(homonym, '00000000-0000-0000-0000-000000000000'::uuid)
);

-- resolve_mention, lookup_mention and explain_mention take the mention's
-- attributes (a new last argument): the old signatures go, with their
-- PL/Python functions and, on Citus, their node-side functions.
DROP FUNCTION IF EXISTS {{ schema }}.resolve_mention(text, text, text[], timestamptz, boolean);
DROP FUNCTION IF EXISTS {{ internal }}.resolve_mention_py(text, text, text[], timestamptz, boolean);
DROP FUNCTION IF EXISTS {{ internal }}.resolve_mention_impl(text, text, text[], timestamptz, boolean);
DROP FUNCTION IF EXISTS {{ schema }}.lookup_mention(text, text, text[], timestamptz, text);
DROP FUNCTION IF EXISTS {{ internal }}.lookup_mention_py(text, text, text[], timestamptz, text);
DROP FUNCTION IF EXISTS {{ internal }}.lookup_mention_impl(text, text, text[], timestamptz, text);
DROP FUNCTION IF EXISTS {{ schema }}.explain_mention(text, text, text[], timestamptz, text);
DROP FUNCTION IF EXISTS {{ internal }}.explain_mention_py(text, text, text[], timestamptz, text);
DROP FUNCTION IF EXISTS {{ internal }}.explain_mention_impl(text, text, text[], timestamptz, text);
