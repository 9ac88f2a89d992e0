-- entity_resolver 0017: re-resolution, a correction that decides stored facts
-- again against the bank as it now stands (reresolve; sql/058_reresolve.sql).
-- Frozen once released: later changes go into a new numbered file.
--
-- * operations: one more kind of correction, ledgered and undone like a
--   merge (the moved mentions' rows as they were, the links of their facts,
--   the pairs and rows of the entities they left and joined).

ALTER TABLE {{ schema }}.operations DROP CONSTRAINT operations_kind;
ALTER TABLE {{ schema }}.operations ADD CONSTRAINT operations_kind CHECK (
    kind IN (
        'merge', 'split', 'rename', 'add_alias', 'remove_alias', 'forget_entity', 'mark_distinct', 'unmark_distinct',
        'reresolve'
    )
);

COMMENT ON COLUMN {{ schema }}.operations.kind IS
'merge, split, rename, add_alias, remove_alias, forget_entity, mark_distinct, unmark_distinct or reresolve.';
