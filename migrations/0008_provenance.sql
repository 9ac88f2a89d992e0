-- entity_resolver 0008: the record behind every number, and correctable identity.
-- Frozen once released: later changes go into a new numbered file.
--
-- * mentions: one row per mention occurrence (provenance). mention_count,
--   first_seen and last_seen are derived from it; co-occurrence counts and
--   last_cooccurred from unit_entities (rebuild_stats recomputes both).
-- * entity_aliases: more names for an entity (exact case-insensitive hits).
-- * entity_forwards: ids of merged entities, forwarded to what they became.
-- * operations: the ledger of operator corrections, with before-images.
-- * stats_queue: decrements (forgetting) and date recomputation.
-- Data written before this version has no provenance (see docs/corrections.md).

ALTER TABLE {{ schema }}.facts ADD COLUMN fact_id text;
ALTER TABLE {{ schema }}.facts ADD CONSTRAINT facts_fact_id_length CHECK (
    fact_id IS NULL OR char_length(fact_id) BETWEEN 1 AND 500
);
CREATE UNIQUE INDEX facts_bank_fact_id_key ON {{ schema }}.facts (bank_id, fact_id);

COMMENT ON COLUMN {{ schema }}.facts.fact_id IS
'The caller''s own id of the fact (unique per bank when given); export and import carry it.';

ALTER TABLE {{ schema }}.entities ADD COLUMN curated boolean NOT NULL DEFAULT FALSE;
ALTER TABLE {{ schema }}.entities ADD COLUMN entity_type text;
ALTER TABLE {{ schema }}.entities ADD CONSTRAINT entities_type_length CHECK (
    entity_type IS NULL OR char_length(entity_type) BETWEEN 1 AND 100
);

COMMENT ON COLUMN {{ schema }}.entities.curated IS
'Created or named by an operator (split, rename): kept when its last mention is forgotten.';
COMMENT ON COLUMN {{ schema }}.entities.entity_type IS
'The type the entity was created with (person, organization, place, ...; lowercased), NULL when untyped.';

CREATE TABLE {{ schema }}.mentions (
    bank_id text NOT NULL,
    unit_id uuid NOT NULL,
    ordinal integer NOT NULL,
    mention text NOT NULL,
    entity_id uuid NOT NULL,
    decision text NOT NULL,
    score float8,
    event_date timestamptz,
    decided_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, unit_id, ordinal),
    CONSTRAINT mentions_ordinal CHECK (ordinal >= 1),
    CONSTRAINT mentions_decision CHECK (
        decision IN ('resolved', 'created', 'literal', 'label', 'alias', 'operator')
    ),
    FOREIGN KEY (bank_id, entity_id) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

-- Statistics are derived per entity: count, earliest and latest event date.
CREATE INDEX mentions_entity_idx ON {{ schema }}.mentions (bank_id, entity_id, event_date);

COMMENT ON TABLE {{ schema }}.mentions IS
'Provenance: one row per mention of a fact or unit, with the entity it went to and why.';
COMMENT ON COLUMN {{ schema }}.mentions.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.mentions.unit_id IS
'The fact (facts.id), the unit of a retain call, or the id of a resolve call outside any fact.';
COMMENT ON COLUMN {{ schema }}.mentions.ordinal IS 'Position of the mention in its unit, from 1.';
COMMENT ON COLUMN {{ schema }}.mentions.mention IS 'The mention text as given.';
COMMENT ON COLUMN {{ schema }}.mentions.entity_id IS 'The entity it resolved to.';
COMMENT ON COLUMN {{ schema }}.mentions.decision IS
'How: resolved (scored), created (new entity), literal (resolve = false), label, alias (exact alias hit), operator (moved by a correction).';
COMMENT ON COLUMN {{ schema }}.mentions.score IS 'The best score seen when it was resolved (NULL without candidates).';
COMMENT ON COLUMN {{ schema }}.mentions.event_date IS 'The mention''s event date (first_seen and last_seen derive from it).';
COMMENT ON COLUMN {{ schema }}.mentions.decided_at IS 'When it was decided (or last moved by an operator).';

CREATE TABLE {{ schema }}.entity_aliases (
    bank_id text NOT NULL,
    alias text COLLATE {{ name_collation }} NOT NULL,
    entity_id uuid NOT NULL,
    source text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, entity_id, alias),
    CONSTRAINT entity_aliases_length CHECK (char_length(alias) BETWEEN 1 AND 500),
    CONSTRAINT entity_aliases_source CHECK (source IN ('operator', 'merge', 'rename', 'memory')),
    FOREIGN KEY (bank_id, entity_id) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

-- One entity per alias and bank, after lower(), as for canonical names.
CREATE UNIQUE INDEX entity_aliases_bank_lower_alias_key
ON {{ schema }}.entity_aliases (bank_id, lower(alias));

COMMENT ON TABLE {{ schema }}.entity_aliases IS
'More names of an entity: a mention equal to an alias after lower() resolves to its entity.';
COMMENT ON COLUMN {{ schema }}.entity_aliases.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_aliases.alias IS 'The alias as written; unique per bank after lower(), never a canonical name.';
COMMENT ON COLUMN {{ schema }}.entity_aliases.entity_id IS 'The entity it names.';
COMMENT ON COLUMN {{ schema }}.entity_aliases.source IS
'operator (add_alias), merge (a merged entity''s name), rename (the old name) or memory (learned by resolution).';
COMMENT ON COLUMN {{ schema }}.entity_aliases.created_at IS 'When it was added.';

CREATE TABLE {{ schema }}.entity_forwards (
    bank_id text NOT NULL,
    old_id uuid NOT NULL,
    new_id uuid NOT NULL,
    operation_id bigint NOT NULL,
    PRIMARY KEY (bank_id, old_id),
    FOREIGN KEY (bank_id, new_id) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

CREATE INDEX entity_forwards_new_idx ON {{ schema }}.entity_forwards (bank_id, new_id);

COMMENT ON TABLE {{ schema }}.entity_forwards IS
'Ids of merged entities and the entity they became, so ids held by applications keep working (current_entity).';
COMMENT ON COLUMN {{ schema }}.entity_forwards.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_forwards.old_id IS 'The id that no longer exists.';
COMMENT ON COLUMN {{ schema }}.entity_forwards.new_id IS 'The entity it forwards to (chains are collapsed).';
COMMENT ON COLUMN {{ schema }}.entity_forwards.operation_id IS 'The operation that merged it.';

CREATE TABLE {{ schema }}.operations (
    bank_id text NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    performed_by name NOT NULL DEFAULT current_user,
    performed_at timestamptz NOT NULL DEFAULT now(),
    reason text,
    entity_ids uuid[] NOT NULL,
    plan jsonb NOT NULL,
    before_image jsonb NOT NULL,
    undone_at timestamptz,
    undone_by name,
    PRIMARY KEY (bank_id, id),
    CONSTRAINT operations_kind CHECK (
        kind IN ('merge', 'split', 'rename', 'add_alias', 'remove_alias', 'forget_entity')
    )
);

COMMENT ON TABLE {{ schema }}.operations IS
'The ledger of operator corrections: who, when, why, what, and the before-image that undoes it.';
COMMENT ON COLUMN {{ schema }}.operations.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.operations.id IS 'Operation id (undo_operation takes it).';
COMMENT ON COLUMN {{ schema }}.operations.kind IS 'merge, split, rename, add_alias, remove_alias or forget_entity.';
COMMENT ON COLUMN {{ schema }}.operations.performed_by IS 'The role that ran it (current_user).';
COMMENT ON COLUMN {{ schema }}.operations.performed_at IS 'When.';
COMMENT ON COLUMN {{ schema }}.operations.reason IS 'Why, as the operator wrote it.';
COMMENT ON COLUMN {{ schema }}.operations.entity_ids IS 'Every entity it touched: a later operation touching one of them depends on it.';
COMMENT ON COLUMN {{ schema }}.operations.plan IS 'What it did (the same plan its dry run returns).';
COMMENT ON COLUMN {{ schema }}.operations.before_image IS 'The rows it changed or removed, as they were: undo restores them.';
COMMENT ON COLUMN {{ schema }}.operations.undone_at IS 'When it was undone (NULL while in effect).';
COMMENT ON COLUMN {{ schema }}.operations.undone_by IS 'Who undid it.';

-- Curation is granted per bank, like bank access.
ALTER TABLE {{ schema }}.bank_roles ADD COLUMN may_curate boolean NOT NULL DEFAULT FALSE;

COMMENT ON COLUMN {{ schema }}.bank_roles.may_curate IS
'The bound role may run operator corrections on the bank (grant_curation).';

-- Forgetting queues decrements, and asks the flush to recompute dates from
-- the record instead of moving them forward. Increments commute, so every
-- count ends exact; but with flush_at_commit off, a fact's decrement may be
-- applied before its increment is: a count may then be below its true value
-- (even negative) until the queue is flushed, and must be allowed to.
ALTER TABLE {{ schema }}.entities DROP CONSTRAINT entities_mention_count;
ALTER TABLE {{ schema }}.entity_cooccurrences DROP CONSTRAINT entity_cooccurrences_count;
ALTER TABLE {{ schema }}.stats_queue DROP CONSTRAINT stats_queue_increment;
ALTER TABLE {{ schema }}.stats_queue ADD COLUMN earliest timestamptz;
ALTER TABLE {{ schema }}.stats_queue ADD COLUMN recompute boolean NOT NULL DEFAULT FALSE;
ALTER TABLE {{ schema }}.stats_queue ADD CONSTRAINT stats_queue_increment CHECK (increment <> 0 OR recompute);

COMMENT ON COLUMN {{ schema }}.stats_queue.increment IS
'How many mentions (or facts sharing the pair) this row adds; negative when forgotten.';
COMMENT ON COLUMN {{ schema }}.stats_queue.earliest IS
'Earliest event date among the increments (moves first_seen back).';
COMMENT ON COLUMN {{ schema }}.stats_queue.recompute IS
'Recompute the dates from the record (mentions, unit_entities) rather than move them: something was forgotten.';
