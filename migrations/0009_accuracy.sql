-- entity_resolver 0009: what the accuracy levers need (docs/accuracy.md).
-- Frozen once released: later changes go into a new numbered file.
--
-- * name_variants and org_suffixes: shipped name data (nickname relations,
--   organisation legal forms), loaded from data/ by every install; not
--   tenant data (no bank_id), read by every bank.
-- * Typed mentions: a person and a place of one name are two entities, so a
--   name is unique per bank and type (an untyped entity is its own type).
-- * explain_mention shows which lever decided: its result gains columns, and
--   a function's result type cannot be replaced, only dropped and created
--   again (sql/030_resolve.sql creates it right after the migrations).

CREATE TABLE {{ schema }}.name_variants (
    name text NOT NULL,
    variant text NOT NULL,
    PRIMARY KEY (name, variant)
);

CREATE INDEX name_variants_variant_idx ON {{ schema }}.name_variants (variant, name);

COMMENT ON TABLE {{ schema }}.name_variants IS
'Installation data (not tenant data): given names and their nicknames (Robert: Bob, Rob), from the nicknames package; '
'used by the name_variants lever. Rewritten by every install.';
COMMENT ON COLUMN {{ schema }}.name_variants.name IS 'A given name, lowercase.';
COMMENT ON COLUMN {{ schema }}.name_variants.variant IS 'A nickname or short form of it, lowercase.';

CREATE TABLE {{ schema }}.org_suffixes (
    form text PRIMARY KEY,
    canonical text NOT NULL
);

COMMENT ON TABLE {{ schema }}.org_suffixes IS
'Installation data (not tenant data): organisation legal forms (Inc, Corp, Ltd, GmbH ...), decorations the '
'org_suffixes lever ignores at the end of a name. Rewritten by every install.';
COMMENT ON COLUMN {{ schema }}.org_suffixes.form IS 'One way of writing the legal form, lowercase ("corp.", "corporation").';
COMMENT ON COLUMN {{ schema }}.org_suffixes.canonical IS 'Its usual abbreviation ("corp").';

DROP INDEX {{ schema }}.entities_bank_lower_name_key;
CREATE UNIQUE INDEX entities_bank_lower_name_key
ON {{ schema }}.entities (bank_id, lower(canonical_name), coalesce(entity_type, ''));

DROP FUNCTION IF EXISTS {{ schema }}.explain_mention(text, text, text[], timestamptz);
DROP FUNCTION IF EXISTS {{ internal }}.explain_mention_py(text, text, text[], timestamptz);

-- Alias memory: a form resolved with confidence resolves the same way again;
-- the memory is read from the provenance by the lowered form.
ALTER TABLE {{ schema }}.mentions DROP CONSTRAINT mentions_decision;
ALTER TABLE {{ schema }}.mentions ADD CONSTRAINT mentions_decision CHECK (
    decision IN ('resolved', 'created', 'literal', 'label', 'alias', 'operator', 'memory')
);
COMMENT ON COLUMN {{ schema }}.mentions.decision IS
'How: resolved (scored), created (new entity), literal (resolve = false), label, alias (exact alias hit), '
'memory (a form resolved before with confidence), operator (moved by a correction).';

CREATE INDEX mentions_memory_idx
ON {{ schema }}.mentions (bank_id, lower(mention COLLATE {{ name_collation }}))
WHERE decision = 'resolved';

-- lookup_mention takes the mention's type (it was new in this version).
DROP FUNCTION IF EXISTS {{ schema }}.lookup_mention(text, text, text[], timestamptz);
DROP FUNCTION IF EXISTS {{ internal }}.lookup_mention_py(text, text, text[], timestamptz);
