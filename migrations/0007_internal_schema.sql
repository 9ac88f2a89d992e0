-- entity_resolver 0007: internal functions move to their own schema.
-- Frozen once released: later changes go into a new numbered file.
--
-- Version 0.1.0 kept its internal functions (_-prefixed) in the public
-- schema beside the API, where \df listed them. They now live in
-- {{ internal }}, re-created by the idempotent files that run after the
-- migrations; the old ones are dropped here (with the triggers that call
-- them, which the idempotent files re-create too).

DROP TRIGGER IF EXISTS facts_resolve_and_link ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS facts_unlink ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS facts_unlink_all ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS facts_reject_relink ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS stats_queue_flush_at_commit ON {{ schema }}.stats_queue;

DROP FUNCTION IF EXISTS {{ schema }}._load_modules(text);
DROP FUNCTION IF EXISTS {{ schema }}._clean_message(text);
DROP FUNCTION IF EXISTS {{ schema }}._bank_call(text, text, jsonb);
DROP FUNCTION IF EXISTS {{ schema }}._resolve_mentions(text, jsonb, timestamptz);
DROP FUNCTION IF EXISTS {{ schema }}._resolve_mention(text, text, text[], timestamptz, boolean);
DROP FUNCTION IF EXISTS {{ schema }}._explain_mention(text, text, text[], timestamptz);
DROP FUNCTION IF EXISTS {{ schema }}._last_call_statements();
DROP FUNCTION IF EXISTS {{ schema }}._link_units(text, uuid[], uuid[], timestamptz[]);
DROP FUNCTION IF EXISTS {{ schema }}._flush_queue(text, boolean);
DROP FUNCTION IF EXISTS {{ schema }}._request_commit_flush();
DROP FUNCTION IF EXISTS {{ schema }}._flush_at_commit();
DROP FUNCTION IF EXISTS {{ schema }}._resolve_and_link_facts(text[], text[], text[], text[]);
DROP FUNCTION IF EXISTS {{ schema }}._facts_resolve_and_link();
DROP FUNCTION IF EXISTS {{ schema }}._facts_unlink();
DROP FUNCTION IF EXISTS {{ schema }}._facts_unlink_all();
DROP FUNCTION IF EXISTS {{ schema }}._facts_reject_relink();
DROP FUNCTION IF EXISTS {{ schema }}._role_name(text);
DROP FUNCTION IF EXISTS {{ schema }}._install_grants();
