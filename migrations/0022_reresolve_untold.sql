-- entity_resolver 0022: reresolve tells an abstention from a decision
-- (issue 32).
-- Frozen once released: later changes go into a new numbered file.
--
-- * _reresolve_fact gains two last columns: untold, the bare entity took
--   the mention because nothing told apart the entities its name fits; and
--   leaning, the one of them the context leaned to, too little to decide.
--   The plan does not let such a choice move a mention off the entity the
--   context leans to. A function's result type cannot be replaced: the old
--   ones go, with their PL/Python functions, and sql/058_reresolve.sql
--   creates the new ones.

DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact(text, uuid);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact(text, uuid, text, boolean);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact_py(text, uuid);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact_py(text, uuid, text, boolean);
