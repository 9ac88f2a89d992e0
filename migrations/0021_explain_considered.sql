-- entity_resolver 0021: explain_mention says which candidates resolution
-- reads (issue 34).
-- Frozen once released: later changes go into a new numbered file.
--
-- * explain_mention gains a last column, considered: whether resolution
--   reads the candidate for the mention called alone, as the session is set
--   (the whole bank's probe, a small bank read whole, or the mention's
--   neighbourhood). A new entity records the best score of those, which
--   may be lower than the best of every row explain shows. A function's
--   result type cannot be replaced: the old one goes, with its PL/Python
--   function and, on Citus, its node-side function, and sql/030_resolve.sql
--   creates the new ones.

DROP FUNCTION IF EXISTS {{ schema }}.explain_mention(text, text, text[], timestamptz, text, jsonb);
DROP FUNCTION IF EXISTS {{ internal }}.explain_mention_py(text, text, text[], timestamptz, text, jsonb);
DROP FUNCTION IF EXISTS {{ internal }}.explain_mention_impl(text, text, text[], timestamptz, text, jsonb);
