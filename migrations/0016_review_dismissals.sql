-- entity_resolver 0016: dismissals of review items (review_queue,
-- dismiss_review; sql/057_review.sql).
-- Frozen once released: later changes go into a new numbered file.
--
-- * review_dismissals: one row per dismissed item of a bank, with the
--   evidence it had when dismissed (its fingerprint: shared partners of a
--   likely duplicate, facts of the smaller group of a likely over-merge). The
--   item stays out of the queue until its evidence grows past it. Keyed by
--   bank first, as every tenant table (docs/design.md), so the rule that
--   distributes every table with a bank_id distributes it (Citus).

CREATE TABLE {{ schema }}.review_dismissals (
    bank_id text NOT NULL REFERENCES {{ schema }}.banks (bank_id) ON DELETE CASCADE,
    item text NOT NULL,
    evidence numeric NOT NULL,
    reason text,
    dismissed_at timestamptz NOT NULL DEFAULT now(),
    dismissed_by name NOT NULL DEFAULT current_user,
    PRIMARY KEY (bank_id, item),
    CONSTRAINT review_dismissals_item_length CHECK (char_length(item) BETWEEN 1 AND 500)
);

COMMENT ON TABLE {{ schema }}.review_dismissals IS
'Review items an operator dismissed (dismiss_review): hidden from review_queue until their evidence grows.';
COMMENT ON COLUMN {{ schema }}.review_dismissals.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.review_dismissals.item IS 'The item key review_queue gave (kind:ids).';
COMMENT ON COLUMN {{ schema }}.review_dismissals.evidence IS
'The item''s evidence fingerprint when dismissed; the item returns when its evidence is larger.';
COMMENT ON COLUMN {{ schema }}.review_dismissals.reason IS 'Why, as the operator wrote it.';
COMMENT ON COLUMN {{ schema }}.review_dismissals.dismissed_at IS 'When it was dismissed.';
COMMENT ON COLUMN {{ schema }}.review_dismissals.dismissed_by IS 'The role that dismissed it (current_user).';
COMMENT ON INDEX {{ schema }}.review_dismissals_pkey IS 'A dismissed item by bank and key.';
