-- entity_resolver 0011: expand_units returns each fact's own fact_id.
-- Frozen once released: later changes go into a new numbered file.
--
-- A function's result columns cannot change with CREATE OR REPLACE: the old
-- expand_units is dropped here and sql/060_retrieval.sql creates the new one
-- (unit_id, shared_entities, fact_id). On a distributed installation the
-- public function is a coordinator wrapper and the body lives in
-- expand_units_impl (build.delegate_bank_functions); both go.

DROP FUNCTION IF EXISTS {{ schema }}.expand_units(text, uuid[], integer);
DROP FUNCTION IF EXISTS {{ internal }}.expand_units_impl(text, uuid[], integer);
