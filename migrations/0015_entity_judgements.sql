-- entity_resolver 0015: judgements, an operator's word that two entities are
-- different (mark_distinct, unmark_distinct; sql/055_judgements.sql).
-- Frozen once released: later changes go into a new numbered file.
--
-- * entity_judgements: one row per pair of entities judged distinct, the
--   pair in id order (one row per pair, whichever way it was given). Keyed
--   by bank first, as every tenant table (docs/design.md); its foreign keys
--   keep it colocated with entities on Citus. An entity that goes takes its
--   judgements with it: corrections move them first (merge_entities) or
--   ledger them (forget_entity), and an entity the flush removes has nothing
--   left to merge.
-- * operations: two more kinds of correction.

CREATE TABLE {{ schema }}.entity_judgements (
    bank_id text NOT NULL,
    entity_a uuid NOT NULL,
    entity_b uuid NOT NULL,
    judgement text NOT NULL DEFAULT 'distinct',
    reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by name NOT NULL DEFAULT current_user,
    PRIMARY KEY (bank_id, entity_a, entity_b),
    CONSTRAINT entity_judgements_order CHECK (entity_a < entity_b),
    CONSTRAINT entity_judgements_judgement CHECK (judgement IN ('distinct')),
    FOREIGN KEY (bank_id, entity_a) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, entity_b) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

-- The judgements of one entity, from either side (the primary key serves entity_a).
CREATE INDEX entity_judgements_b_idx ON {{ schema }}.entity_judgements (bank_id, entity_b);

COMMENT ON TABLE {{ schema }}.entity_judgements IS
'Operator judgements on pairs of entities: distinct (mark_distinct) refuses any merge that would make them one.';
COMMENT ON COLUMN {{ schema }}.entity_judgements.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_judgements.entity_a IS 'One entity of the pair (the smaller id).';
COMMENT ON COLUMN {{ schema }}.entity_judgements.entity_b IS 'The other entity of the pair (the larger id).';
COMMENT ON COLUMN {{ schema }}.entity_judgements.judgement IS 'What was judged: distinct (two different things).';
COMMENT ON COLUMN {{ schema }}.entity_judgements.reason IS 'Why, as the operator wrote it.';
COMMENT ON COLUMN {{ schema }}.entity_judgements.created_at IS 'When it was judged.';
COMMENT ON COLUMN {{ schema }}.entity_judgements.created_by IS 'The role that judged it (current_user).';
COMMENT ON INDEX {{ schema }}.entity_judgements_pkey IS
'A judged pair by bank and ids (entity_a the smaller), and an entity''s judgements from the smaller side.';
COMMENT ON INDEX {{ schema }}.entity_judgements_b_idx IS
'An entity''s judgements where it is the second of the pair (merge checks and moves them).';

ALTER TABLE {{ schema }}.operations DROP CONSTRAINT operations_kind;
ALTER TABLE {{ schema }}.operations ADD CONSTRAINT operations_kind CHECK (
    kind IN (
        'merge', 'split', 'rename', 'add_alias', 'remove_alias', 'forget_entity', 'mark_distinct', 'unmark_distinct'
    )
);

COMMENT ON COLUMN {{ schema }}.operations.kind IS
'merge, split, rename, add_alias, remove_alias, forget_entity, mark_distinct or unmark_distinct.';
