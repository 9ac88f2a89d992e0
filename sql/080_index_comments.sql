-- What \di+ and \ds+ show: each index says which reads it serves, each
-- sequence what it numbers. The migrations that made them are frozen, and a
-- comment changes no data, so the comments are set here on every install.
-- (On Citus, sql/citus/900_citus.sql rebuilds the trigram index and says it again.)

COMMENT ON INDEX {{ schema }}.banks_pkey IS
'One row per bank: the bank_id every call checks first.';

COMMENT ON INDEX {{ schema }}.entities_pkey IS
'An entity by bank and id (what links, mentions and pairs refer to).';
COMMENT ON INDEX {{ schema }}.entities_bank_folded_name_key IS
'Names unique per bank and type after lower() (folded()), homonyms apart; the resolver''s exact-name look-ups.';
COMMENT ON INDEX {{ schema }}.entities_name_trgm_idx IS
'The candidate probe: a bank''s regular names similar to a key (pg_trgm; the bank is a column of the index, '
'so other banks'' rows are not fetched; no pending list).';
COMMENT ON INDEX {{ schema }}.entities_bank_trigram_key_idx IS
'The probe of identical names: a bank''s regular names of the same trigram set as a key (trigram_key()).';
COMMENT ON INDEX {{ schema }}.entities_label_idx IS
'A bank''s label entities, which the trigram index leaves out (explain_mention shows them).';

COMMENT ON INDEX {{ schema }}.entity_aliases_pkey IS
'An entity''s aliases, by bank and entity.';
COMMENT ON INDEX {{ schema }}.entity_aliases_bank_folded_alias_key IS
'Aliases unique per bank after lower() (folded()); a mention equal to one resolves through it.';

COMMENT ON INDEX {{ schema }}.unit_entities_pkey IS
'A unit''s links: the entities a fact mentions, one row each.';
COMMENT ON INDEX {{ schema }}.unit_entities_entity_idx IS
'The units that link an entity: recounts, merges, splits and forgetting.';
COMMENT ON INDEX {{ schema }}.unit_entities_entity_recent_idx IS
'An entity''s most recent units first: expand_units takes at most expansion_per_entity_limit of them without a sort.';

COMMENT ON INDEX {{ schema }}.entity_cooccurrences_pkey IS
'A pair of entities (entity_id_1 the smaller id), and an entity''s pairs from the smaller side.';
COMMENT ON INDEX {{ schema }}.entity_cooccurrences_reverse_idx IS
'An entity''s pairs from the larger side (entity_neighbors and the context read both sides).';

COMMENT ON INDEX {{ schema }}.mentions_pkey IS
'Provenance: a unit''s mentions in order.';
COMMENT ON INDEX {{ schema }}.mentions_entity_idx IS
'An entity''s mentions by event date: the statistics rebuilt from the record (count, first and last seen).';
COMMENT ON INDEX {{ schema }}.mentions_memory_idx IS
'The resolved mentions of a form (folded()): the memory of confidently resolved forms, read from the provenance.';
COMMENT ON INDEX {{ schema }}.mentions_attributes_idx IS
'The entities holding an identifying attribute value (mentions.attributes @> {"email": ...}).';
COMMENT ON INDEX {{ schema }}.mentions_attributed_idx IS
'The provenance rows of an entity that carry attributes (a candidate''s distinguishing values).';

COMMENT ON INDEX {{ schema }}.entity_forwards_pkey IS
'Where a merged-away id went: current_entity and the corrections follow it.';
COMMENT ON INDEX {{ schema }}.entity_forwards_new_idx IS
'The ids forwarded to an entity (undoing a merge, merging again).';

COMMENT ON INDEX {{ schema }}.operations_pkey IS
'The ledger of corrections by bank and operation id (undo_operation, operation_history).';

COMMENT ON INDEX {{ schema }}.stats_queue_pkey IS
'Queued statistic changes in the order they were queued, per bank (flush_stats).';
COMMENT ON INDEX {{ schema }}.stats_queue_txid_idx IS
'The rows one transaction queued: the flush at commit applies its own rows and no one else''s.';

COMMENT ON INDEX {{ schema }}.facts_pkey IS
'A fact of the facts table by bank and id.';
COMMENT ON INDEX {{ schema }}.facts_bank_fact_id_key IS
'The caller''s fact_id, unique per bank (a fact_id names one fact).';

COMMENT ON INDEX {{ schema }}.bank_roles_pkey IS
'The roles bound to a bank (grant_bank_access).';
COMMENT ON INDEX {{ schema }}.bank_roles_role_idx IS
'The banks bound to a role: the row-level security policies look the caller up by role.';

COMMENT ON INDEX {{ schema }}.name_variants_pkey IS
'Nickname data: the variants of a given name.';
COMMENT ON INDEX {{ schema }}.name_variants_variant_idx IS
'Nickname data: the names a variant belongs to.';
COMMENT ON INDEX {{ schema }}.org_suffixes_pkey IS
'Organisation suffix data, one row per form.';
COMMENT ON INDEX {{ schema }}.plpython_modules_pkey IS
'The resolver''s PL/Python modules by name (loaded into each session).';
COMMENT ON INDEX {{ schema }}.schema_migrations_pkey IS
'The migration ledger, one row per version applied.';

COMMENT ON SEQUENCE {{ schema }}.operations_id_seq IS
'Numbers the ledger''s operations (operations.id).';
COMMENT ON SEQUENCE {{ schema }}.stats_queue_id_seq IS
'Numbers queued statistic changes in the order they were queued (stats_queue.id).';
COMMENT ON SEQUENCE {{ schema }}.facts_stored_order_seq IS
'The order facts were stored in (facts.stored_order): export writes them back in that order.';
