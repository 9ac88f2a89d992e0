-- entity_resolver 0006: entity names fold case with a Unicode-aware collation.
-- In a database whose LC_CTYPE is C, lower() folds ASCII letters only, so
-- "İstanbul" and "istanbul" would be two names to the unique index. There the
-- installer renders name_collation as the server's C.UTF-8 collation, whose
-- lower() folds every letter, and the resolver lowers mention texts with the
-- column's collation; elsewhere it is the database default (no change).
-- The views reading the column are dropped here and re-created by
-- sql/views.sql, which the installer applies right after the migrations.

DROP VIEW IF EXISTS {{ schema }}.entity_neighbors;
DROP VIEW IF EXISTS {{ schema }}.entity_overview;

ALTER TABLE {{ schema }}.entities
ALTER COLUMN canonical_name TYPE text COLLATE {{ name_collation }};

COMMENT ON COLUMN {{ schema }}.entities.canonical_name IS
'The name as first written (or as chosen by in-batch clustering), 1 to 500 characters. Its collation folds case: the database default, or C.UTF-8 in a database whose LC_CTYPE is C.';
