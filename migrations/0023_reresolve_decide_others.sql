-- entity_resolver 0023: one function decides a stored fact again, and says
-- when a score chose among names nothing told apart (issue 32).
-- Frozen once released: later changes go into a new numbered file.
--
-- * _reresolve_decide takes the facts left out beside the fact decided as
--   a last argument, others (empty by default: the fact alone), and its
--   other arguments default to NULL. It replaces _reresolve_decide_apart,
--   which repeated it, and the two-argument form, which its defaults now
--   are. A new argument makes a new function: the old ones go.
-- * _reresolve_fact gains a last column, by_score: the name fits several
--   entities, nothing told them apart and no bare entity holds the mention,
--   so the best score chose one. A form decided apart does not move on it.
--   A function's result type cannot be replaced: the old ones go, with their
--   PL/Python functions.
--
-- sql/058_reresolve.sql creates the new ones.

DROP FUNCTION IF EXISTS {{ internal }}._reresolve_decide(text, uuid);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_decide(text, uuid, uuid[], text);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_decide_apart(text, uuid, uuid[], text);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact(text, uuid);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact(text, uuid, text, boolean);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact_py(text, uuid);
DROP FUNCTION IF EXISTS {{ internal }}._reresolve_fact_py(text, uuid, text, boolean);
