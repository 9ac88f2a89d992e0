-- entity_resolver 0001: banks, entities, links, the co-occurrence graph,
-- the fact table and the shipped PL/Python modules.
-- Frozen once released: later changes go into a new numbered file.
--
-- Every tenant table carries bank_id and every primary key and unique
-- constraint includes it, so the schema can be distributed by bank_id
-- (Citus) without redesign.

CREATE TABLE {{ schema }}.banks (
    bank_id text PRIMARY KEY,
    settings jsonb NOT NULL DEFAULT '{}',
    entity_labels jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT banks_bank_id_length CHECK (char_length(bank_id) BETWEEN 1 AND 100),
    CONSTRAINT banks_settings_object CHECK (jsonb_typeof(settings) = 'object'),
    CONSTRAINT banks_labels_object CHECK (jsonb_typeof(entity_labels) = 'object')
);

COMMENT ON TABLE {{ schema }}.banks IS
'One row per memory bank (tenant); created on first use.';
COMMENT ON COLUMN {{ schema }}.banks.bank_id IS
'Tenant key, 1 to 100 characters; part of every key in the schema.';
COMMENT ON COLUMN {{ schema }}.banks.settings IS
'Overrides of the resolver defaults (threshold, weights, ...); see configure_bank.';
COMMENT ON COLUMN {{ schema }}.banks.entity_labels IS
'Controlled vocabulary of label groups; see set_entity_labels.';
COMMENT ON COLUMN {{ schema }}.banks.created_at IS
'When the bank was first used.';

CREATE TABLE {{ schema }}.entities (
    bank_id text NOT NULL REFERENCES {{ schema }}.banks (bank_id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    canonical_name text NOT NULL,
    entity_kind text NOT NULL DEFAULT 'regular',
    mention_count bigint NOT NULL DEFAULT 0,
    first_seen timestamptz,
    last_seen timestamptz,
    metadata jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (bank_id, id),
    -- 500 characters are at most 2,000 bytes: with a 100-character bank id
    -- the key stays under the btree limit of about 2,700 bytes.
    CONSTRAINT entities_name_length CHECK (
        char_length(canonical_name) BETWEEN 1 AND 500
    ),
    CONSTRAINT entities_kind CHECK (entity_kind IN ('regular', 'label')),
    CONSTRAINT entities_mention_count CHECK (mention_count >= 0)
);

-- Case-insensitive dedup is the database's: lower() on the stored side here,
-- lower() on the probing side in every query.
CREATE UNIQUE INDEX entities_bank_lower_name_key
ON {{ schema }}.entities (bank_id, lower(canonical_name));

-- Fuzzy candidate probe; label rows are never fuzzy candidates.
CREATE INDEX entities_name_trgm_idx
ON {{ schema }}.entities
USING gin (lower(canonical_name) {{ trgm_schema }}.gin_trgm_ops)
WHERE entity_kind <> 'label';

COMMENT ON TABLE {{ schema }}.entities IS
'One row per canonical entity of a bank; names are unique per bank after lower().';
COMMENT ON COLUMN {{ schema }}.entities.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entities.id IS 'Entity id (uuid).';
COMMENT ON COLUMN {{ schema }}.entities.canonical_name IS
'The name as first written (or as chosen by in-batch clustering), 1 to 500 characters.';
COMMENT ON COLUMN {{ schema }}.entities.entity_kind IS
'regular (fuzzy-resolvable) or label (controlled vocabulary, exact match only).';
COMMENT ON COLUMN {{ schema }}.entities.mention_count IS
'Number of resolved mentions applied by flush_stats.';
COMMENT ON COLUMN {{ schema }}.entities.first_seen IS
'Earliest event date of a mention that created the entity.';
COMMENT ON COLUMN {{ schema }}.entities.last_seen IS
'Latest event date of an applied mention (feeds the recency signal).';
COMMENT ON COLUMN {{ schema }}.entities.metadata IS
'Free-form metadata for the application; the resolver does not read it.';

CREATE TABLE {{ schema }}.unit_entities (
    bank_id text NOT NULL,
    unit_id uuid NOT NULL,
    entity_id uuid NOT NULL,
    event_date timestamptz,
    PRIMARY KEY (bank_id, unit_id, entity_id),
    FOREIGN KEY (bank_id, entity_id)
    REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

CREATE INDEX unit_entities_entity_idx
ON {{ schema }}.unit_entities (bank_id, entity_id, unit_id);

COMMENT ON TABLE {{ schema }}.unit_entities IS
'Which fact (unit) mentions which entity: one row per (unit, entity) pair.';
COMMENT ON COLUMN {{ schema }}.unit_entities.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.unit_entities.unit_id IS
'The fact (unit) id: facts.id, or the caller''s own id passed to link_unit.';
COMMENT ON COLUMN {{ schema }}.unit_entities.entity_id IS 'The entity the unit mentions.';
COMMENT ON COLUMN {{ schema }}.unit_entities.event_date IS
'Event date of the unit; breaks ties in expand_units (most recent first).';

CREATE TABLE {{ schema }}.entity_cooccurrences (
    bank_id text NOT NULL,
    entity_id_1 uuid NOT NULL,
    entity_id_2 uuid NOT NULL,
    cooccurrence_count bigint NOT NULL DEFAULT 0,
    last_cooccurred timestamptz,
    PRIMARY KEY (bank_id, entity_id_1, entity_id_2),
    -- Each unordered pair is stored once.
    CONSTRAINT entity_cooccurrences_ordered CHECK (entity_id_1 < entity_id_2),
    CONSTRAINT entity_cooccurrences_count CHECK (cooccurrence_count >= 0),
    FOREIGN KEY (bank_id, entity_id_1)
    REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, entity_id_2)
    REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);

CREATE INDEX entity_cooccurrences_reverse_idx
ON {{ schema }}.entity_cooccurrences (bank_id, entity_id_2, entity_id_1);

COMMENT ON TABLE {{ schema }}.entity_cooccurrences IS
'The co-occurrence graph: how often two entities appeared in the same fact.';
COMMENT ON COLUMN {{ schema }}.entity_cooccurrences.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_cooccurrences.entity_id_1 IS
'The smaller entity id of the pair.';
COMMENT ON COLUMN {{ schema }}.entity_cooccurrences.entity_id_2 IS
'The larger entity id of the pair.';
COMMENT ON COLUMN {{ schema }}.entity_cooccurrences.cooccurrence_count IS
'Number of facts mentioning both entities (applied by flush_stats).';
COMMENT ON COLUMN {{ schema }}.entity_cooccurrences.last_cooccurred IS
'Latest event date of a fact mentioning both.';

CREATE TABLE {{ schema }}.facts (
    bank_id text NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    content text,
    mentions jsonb NOT NULL DEFAULT '[]',
    event_date timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

COMMENT ON TABLE {{ schema }}.facts IS
'Ready fact table: inserting rows resolves and links their mentions.';
COMMENT ON COLUMN {{ schema }}.facts.bank_id IS 'Owning bank (created on first use).';
COMMENT ON COLUMN {{ schema }}.facts.id IS 'Fact id; used as the unit id in unit_entities.';
COMMENT ON COLUMN {{ schema }}.facts.content IS 'The fact text, stored as given.';
COMMENT ON COLUMN {{ schema }}.facts.mentions IS
'jsonb array of mentions in the resolve_mentions element format.';
COMMENT ON COLUMN {{ schema }}.facts.event_date IS
'When the fact happened; drives recency and last_seen.';
COMMENT ON COLUMN {{ schema }}.facts.created_at IS 'When the row was inserted.';

-- The PL/Python modules (plpython/*.py) are shipped as rows, so installing
-- needs no file on the server and a reinstall replaces the code atomically.
CREATE TABLE {{ schema }}.plpython_modules (
    name text PRIMARY KEY,
    ordinal integer NOT NULL,
    source text NOT NULL,
    sha256 text NOT NULL
);

COMMENT ON TABLE {{ schema }}.plpython_modules IS
'Installation metadata (not tenant data): resolver modules loaded once per session.';
COMMENT ON COLUMN {{ schema }}.plpython_modules.name IS 'Module name (import name).';
COMMENT ON COLUMN {{ schema }}.plpython_modules.ordinal IS 'Load order.';
COMMENT ON COLUMN {{ schema }}.plpython_modules.source IS 'Python source.';
COMMENT ON COLUMN {{ schema }}.plpython_modules.sha256 IS 'Digest of the source.';
