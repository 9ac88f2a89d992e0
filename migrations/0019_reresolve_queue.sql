-- entity_resolver 0019: the re-resolution queue (the bank setting
-- auto_reresolve; reresolve_queued, sql/058_reresolve.sql).
-- Frozen once released: later changes go into a new numbered file.
--
-- * reresolve_queue: one row per unit written while its bank had
--   auto_reresolve on, until reresolve_queued decides its neighbourhood again
--   (the facts that share an entity with it). Keyed by bank first, as every
--   tenant table (docs/design.md), so the rule that distributes every table
--   with a bank_id distributes it (Citus). The unit is not a foreign key: a
--   retain or a resolve call is a unit without a fact, and a unit forgotten
--   takes its row with it (_forget_units).

CREATE TABLE {{ schema }}.reresolve_queue (
    bank_id text NOT NULL REFERENCES {{ schema }}.banks (bank_id) ON DELETE CASCADE,
    unit_id uuid NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, unit_id)
);

COMMENT ON TABLE {{ schema }}.reresolve_queue IS
'Units written while their bank had auto_reresolve on, waiting for reresolve_queued to decide their neighbourhood '
'again.';
COMMENT ON COLUMN {{ schema }}.reresolve_queue.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.reresolve_queue.unit_id IS 'The unit (a fact''s id, or a retain''s or resolve call''s).';
COMMENT ON COLUMN {{ schema }}.reresolve_queue.queued_at IS 'When its unit was written (the oldest are taken first).';
COMMENT ON INDEX {{ schema }}.reresolve_queue_pkey IS 'A queued unit by bank and id.';

-- _reresolve_plan takes the facts of a scope (unit_ids, reresolve_queued's)
-- as a last argument: the old signature goes.
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_plan(text, uuid[], timestamptz, boolean);
