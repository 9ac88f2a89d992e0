-- Review: what an operator should look at, ranked, each with the dry run that
-- would fix it (review_queue), and a way to say "looked, it is fine"
-- (dismiss_review).
--
-- Kinds of item:
-- * likely_duplicate: two entities of the bank of the same type (or both
--   untyped) whose folded names are close (pg_trgm similarity at least 0.3)
--   and whose facts share partners (another entity appears in facts of
--   both). Pairs judged distinct (mark_distinct) are not items. The fix is
--   the merge of the one with fewer mentions into the other.
-- * likely_over_merge: an entity whose facts fall into two or more groups
--   with no partner in common (facts linked when they share a partner
--   entity); the fix is the split of the smaller group's facts.
-- * close_call: a recent decision of the resolver (provenance: mentions
--   decided in the last _close_call_days() days) whose score was within
--   _close_call_margin() of the bank's threshold. Resolved into an entity:
--   the fix is the split of that fact from it. Made a new entity: the fix
--   is the merge of the new entity into the closest name of the bank (or
--   mark_distinct, in the evidence, to say they differ).
--   (`ambiguous` is an outcome explain_mention shows; provenance does not
--   record it, so the queue cannot list it.)
-- Evidence is read from the record (unit_entities), not from the flushed
-- statistics, so a fact just written counts at once.
-- Cost: the pairs of close names are found by comparing every two entities
-- of one type in the bank (similarity(), not the trigram index: the index's
-- operator class differs between a single node and Citus, migration 0012),
-- and partners by joining the bank's links; a review of a large bank is a
-- batch job, not a request path.
--
-- A dismissed item (review_dismissals) stays out of the queue while its
-- evidence fingerprint (shared partners, facts of the smaller group) is not
-- larger than when it was dismissed: new evidence brings it back.

CREATE OR REPLACE FUNCTION {{ internal }}._close_call_margin()
RETURNS float8
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- How near the threshold a score is a close call. 0.05 is a tenth of the
    -- name weight: one letter in a ten-letter name (difflib ratio 0.9 against
    -- 1.0) moves the score by 0.05, so a decision this close would have gone
    -- the other way for a one-letter difference or a day more of recency.
    SELECT 0.05::float8
$$;

COMMENT ON FUNCTION {{ internal }}._close_call_margin() IS
'Internal: how near the bank''s threshold a decision''s score is a close call in review_queue (0.05, either side).';

CREATE OR REPLACE FUNCTION {{ internal }}._close_call_days()
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Close calls are recent decisions: an operator reviews what the resolver
    -- did lately; older ones have been seen, or have been lived with.
    SELECT 30
$$;

COMMENT ON FUNCTION {{ internal }}._close_call_days() IS
'Internal: how recent (days since mentions.decided_at) a decision must be to be a close call in review_queue (30).';

CREATE OR REPLACE FUNCTION {{ internal }}._effective_settings(bank_id text)
RETURNS jsonb
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ banks.effective_settings_sql $$;

COMMENT ON FUNCTION {{ internal }}._effective_settings(text) IS
'Internal: the bank''s settings as resolution reads them (defaults of plpython/settings.py and its overrides).';

CREATE OR REPLACE FUNCTION {{ internal }}._review_items(bank_id text)
RETURNS TABLE (
    item text,
    kind text,
    score numeric,
    entity_ids uuid[],
    names text[],
    evidence jsonb,
    fingerprint numeric,
    fix text
)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    settings jsonb := _effective_settings(_review_items.bank_id);
    threshold float8 := (settings ->> 'threshold')::float8;
    -- A name under the floor is never merged (design §3.4): no closest name.
    floor float8 := (settings ->> 'merge_min_similarity')::float8;
    margin float8 := _close_call_margin();
BEGIN
    -- Every item of the bank, dismissed or not (review_queue filters).
    RETURN QUERY
    WITH partners AS (
        -- Who appears with whom, fact by fact.
        SELECT DISTINCT x.entity_id AS entity, y.entity_id AS partner
        FROM unit_entities AS x
        INNER JOIN unit_entities AS y ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id
        WHERE x.bank_id = _review_items.bank_id AND y.bank_id = _review_items.bank_id AND x.entity_id <> y.entity_id
    ),
    close AS (
        SELECT a.id AS a_id, a.canonical_name AS a_name, a.mention_count AS a_count,
            b.id AS b_id, b.canonical_name AS b_name, b.mention_count AS b_count,
            {{ trgm_schema }}.similarity(folded(a.canonical_name), folded(b.canonical_name)) AS sim
        FROM entities AS a
        INNER JOIN entities AS b ON a.bank_id = b.bank_id AND a.id < b.id
        WHERE
            a.bank_id = _review_items.bank_id AND b.bank_id = _review_items.bank_id
            AND a.entity_kind = 'regular' AND b.entity_kind = 'regular'
            AND coalesce(a.entity_type, '') = coalesce(b.entity_type, '')
            AND {{ trgm_schema }}.similarity(folded(a.canonical_name), folded(b.canonical_name)) >= 0.3
            AND NOT _judged_distinct(_review_items.bank_id, a.id, b.id)
    ),
    supported AS (
        SELECT c.*, (
            SELECT count(*) FROM partners AS p
            INNER JOIN partners AS q ON p.partner = q.partner
            WHERE p.entity = c.a_id AND q.entity = c.b_id AND p.partner NOT IN (c.a_id, c.b_id)
        ) AS shared
        FROM close AS c
    )
    SELECT
        format('likely_duplicate:%s:%s', s.a_id, s.b_id),
        'likely_duplicate'::text,
        round((s.sim * (1 + ln(1 + s.shared)))::numeric, 3),
        ARRAY[s.a_id, s.b_id],
        ARRAY[s.a_name, s.b_name],
        jsonb_build_object(
            'why', format('%s and %s: names %s similar, %s partner(s) in common',
                quote_literal(s.a_name), quote_literal(s.b_name), round(s.sim::numeric, 2), s.shared),
            'name_similarity', round(s.sim::numeric, 3),
            'shared_partners', s.shared
        ),
        s.shared::numeric,
        -- The one with fewer mentions goes into the other.
        CASE
            WHEN s.a_count >= s.b_count
                THEN format('SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                    current_schema(), _review_items.bank_id, s.b_id, s.a_id)
            ELSE format('SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                current_schema(), _review_items.bank_id, s.a_id, s.b_id)
        END
    FROM supported AS s
    WHERE s.shared > 0;

    RETURN QUERY
    WITH RECURSIVE facts_of AS (
        -- Each fact of an entity of two facts or more, with its partners.
        SELECT u.entity_id AS entity, u.unit_id AS unit, v.entity_id AS partner
        FROM unit_entities AS u
        INNER JOIN unit_entities AS v ON u.bank_id = v.bank_id AND u.unit_id = v.unit_id
        WHERE u.bank_id = _review_items.bank_id AND v.bank_id = _review_items.bank_id AND u.entity_id <> v.entity_id
    ),
    linked AS (
        -- Two facts of one entity are linked when they share a partner.
        SELECT DISTINCT f.entity, f.unit AS unit_a, g.unit AS unit_b
        FROM facts_of AS f
        INNER JOIN facts_of AS g ON f.entity = g.entity AND f.partner = g.partner
    ),
    reach AS (
        SELECT l.entity, l.unit_a AS unit, l.unit_b AS other FROM linked AS l
        UNION
        SELECT r.entity, r.unit, l.unit_b
        FROM reach AS r
        INNER JOIN linked AS l ON r.entity = l.entity AND r.other = l.unit_a
    ),
    component AS (
        -- A fact's group: the smallest fact id it reaches.
        SELECT r.entity, r.unit, min(r.other::text) AS label FROM reach AS r GROUP BY r.entity, r.unit
    ),
    groups AS (
        SELECT c.entity, c.label, array_agg(c.unit ORDER BY c.unit) AS units, count(*) AS n
        FROM component AS c GROUP BY c.entity, c.label
    ),
    split AS (
        -- Entities of two groups or more, and their smallest group.
        SELECT DISTINCT ON (g.entity) g.entity, g.units AS smallest, g.n AS smallest_n,
            count(*) OVER (PARTITION BY g.entity) AS n_groups, sum(g.n) OVER (PARTITION BY g.entity) AS n_facts
        FROM groups AS g
        ORDER BY g.entity, g.n, g.label
    )
    SELECT
        format('likely_over_merge:%s', e.id),
        'likely_over_merge'::text,
        round((sp.smallest_n::numeric / sp.n_facts) * 2, 3),
        ARRAY[e.id],
        ARRAY[e.canonical_name],
        jsonb_build_object(
            'why', format('%s: %s facts in %s groups sharing no partner; the smallest has %s',
                quote_literal(e.canonical_name), sp.n_facts, sp.n_groups, sp.smallest_n),
            'groups', sp.n_groups,
            'facts', sp.n_facts,
            'unit_ids', to_jsonb(sp.smallest),
            'fact_ids', (
                SELECT coalesce(jsonb_agg(f.fact_id ORDER BY f.fact_id), '[]') FROM facts AS f
                WHERE f.bank_id = _review_items.bank_id AND f.id = ANY(sp.smallest) AND f.fact_id IS NOT NULL
            )
        ),
        sp.smallest_n::numeric,
        format('SELECT %I.split_entity(%L, %L, %L::uuid[], %L, dry_run => true);',
            current_schema(), _review_items.bank_id, e.id, sp.smallest::text, e.canonical_name || ' (split)')
    FROM split AS sp
    INNER JOIN entities AS e ON e.bank_id = _review_items.bank_id AND sp.entity = e.id
    WHERE sp.n_groups >= 2;

    RETURN QUERY
    WITH recent AS (
        -- Decisions the resolver scored, lately, near the threshold (scores
        -- compared at 6 decimals, as the resolver compares them).
        SELECT m.unit_id, m.ordinal, m.mention, m.decision, m.score, e.id AS entity, e.canonical_name AS name,
            e.entity_type, f.fact_id,
            round((m.score - threshold)::numeric, 6) AS distance
        FROM mentions AS m
        INNER JOIN entities AS e ON m.bank_id = e.bank_id AND m.entity_id = e.id
        LEFT JOIN facts AS f ON m.bank_id = f.bank_id AND m.unit_id = f.id
        WHERE
            m.bank_id = _review_items.bank_id AND e.entity_kind = 'regular'
            AND m.decision IN ('resolved', 'created') AND m.score IS NOT NULL
            AND m.decided_at >= now() - make_interval(days => _close_call_days())
            AND abs(round((m.score - threshold)::numeric, 6)) <= round(margin::numeric, 6)
    ),
    calls AS (
        SELECT r.*, c.id AS other, c.canonical_name AS other_name, c.sim,
            -- The facts behind the item's entities: more is new evidence.
            (
                SELECT count(DISTINCT ue.unit_id) FROM unit_entities AS ue
                WHERE ue.bank_id = _review_items.bank_id AND ue.entity_id IN (r.entity, c.id)
            ) AS units,
            EXISTS (
                SELECT 1 FROM mentions AS o
                WHERE o.bank_id = _review_items.bank_id AND o.entity_id = r.entity AND o.unit_id <> r.unit_id
            ) AS elsewhere
        FROM recent AS r
        -- A new entity's closest name of the bank (one type, or untyped),
        -- not judged distinct from it: the candidate it nearly was.
        LEFT JOIN LATERAL (
            SELECT x.id, x.canonical_name,
                {{ trgm_schema }}.similarity(folded(x.canonical_name), folded(r.name)) AS sim
            FROM entities AS x
            WHERE
                r.decision = 'created' AND x.bank_id = _review_items.bank_id AND x.id <> r.entity
                AND x.entity_kind = 'regular'
                AND (x.entity_type IS NULL OR r.entity_type IS NULL OR x.entity_type = r.entity_type)
                AND NOT _judged_distinct(_review_items.bank_id, x.id, r.entity)
                AND {{ trgm_schema }}.similarity(folded(x.canonical_name), folded(r.name)) >= floor
            ORDER BY 3 DESC, x.id
            LIMIT 1
        ) AS c ON TRUE
    )
    SELECT
        format('close_call:%s:%s', c.unit_id, c.ordinal),
        'close_call'::text,
        -- The closer to the threshold, the higher (1 at the threshold, 0 at the margin).
        round((1 - abs(c.distance) / margin::numeric), 3),
        CASE WHEN c.decision = 'created' THEN ARRAY[c.entity, c.other] ELSE ARRAY[c.entity] END,
        CASE WHEN c.decision = 'created' THEN ARRAY[c.name, c.other_name] ELSE ARRAY[c.name] END,
        jsonb_build_object(
            'why', CASE
                WHEN c.decision = 'created' THEN format(
                    '%s in %s became the new entity %s with score %s, %s under the threshold %s; the closest name is %s',
                    quote_literal(c.mention), coalesce('fact ' || quote_literal(c.fact_id), 'unit ' || c.unit_id),
                    quote_literal(c.name), round(c.score::numeric, 3), round(abs(c.distance), 3), threshold,
                    quote_literal(c.other_name))
                ELSE format(
                    '%s in %s resolved to %s with score %s, %s %s the threshold %s',
                    quote_literal(c.mention), coalesce('fact ' || quote_literal(c.fact_id), 'unit ' || c.unit_id),
                    quote_literal(c.name), round(c.score::numeric, 3), round(abs(c.distance), 3),
                    CASE WHEN c.distance >= 0 THEN 'over' ELSE 'under' END, threshold)
            END,
            'mention', c.mention,
            'unit_id', c.unit_id,
            'fact_id', c.fact_id,
            'ordinal', c.ordinal,
            'decision', c.decision,
            'score', round(c.score::numeric, 6),
            'threshold', threshold,
            'margin', margin,
            'closest', CASE WHEN c.decision = 'created' THEN jsonb_build_object(
                'entity_id', c.other, 'name', c.other_name, 'name_similarity', round(c.sim::numeric, 3)
            ) END,
            -- The other answer to a near miss: they are different.
            'or', CASE WHEN c.decision = 'created' THEN format(
                'SELECT %I.mark_distinct(%L, %L, %L, dry_run => true);',
                current_schema(), _review_items.bank_id, c.entity, c.other
            ) END,
            'explain', format('SELECT * FROM %I.explain_mention(%L, %L);', current_schema(), _review_items.bank_id,
                c.mention)
        ),
        c.units::numeric,
        CASE
            WHEN c.decision = 'created'
                THEN format('SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                    current_schema(), _review_items.bank_id, c.entity, c.other)
            ELSE format('SELECT %I.split_entity(%L, %L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                current_schema(), _review_items.bank_id, c.entity, c.unit_id, c.mention || ' (split)')
        END
    FROM calls AS c
    -- A fix must exist: a near miss needs a closest name; a resolved
    -- mention's split needs the entity to keep something.
    WHERE (c.decision = 'created' AND c.other IS NOT NULL) OR (c.decision = 'resolved' AND c.elsewhere);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._review_items(text) IS
'Internal: every review item of a bank (likely duplicates, likely over-merges, close calls), dismissed or not, '
'with its evidence fingerprint and fix.';

CREATE OR REPLACE FUNCTION {{ schema }}.review_queue(bank_id text, max_results integer DEFAULT 50)
RETURNS TABLE (
    item text,
    kind text,
    score numeric,
    entity_ids uuid[],
    names text[],
    evidence jsonb,
    fix text
)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(review_queue.bank_id);
    n integer := _check_max_results(review_queue.max_results);
BEGIN
    -- The items of the bank not dismissed (or whose evidence grew since),
    -- best first.
    RETURN QUERY
    SELECT i.item, i.kind, i.score, i.entity_ids, i.names, i.evidence, i.fix
    FROM _review_items(b) AS i
    WHERE NOT EXISTS (
        SELECT 1 FROM review_dismissals AS d
        WHERE d.bank_id = b AND d.item = i.item AND d.evidence >= i.fingerprint
    )
    ORDER BY i.score DESC, i.item
    LIMIT n;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.review_queue(text, integer) IS
'What an operator should review, best first: likely duplicates (close names of one type, partners in common, not '
'judged distinct), likely over-merges (facts in groups sharing no partner) and close calls (recent decisions '
'within a margin of the threshold), each with its evidence and the dry run that would fix it. Dismissed items '
'(dismiss_review) stay out until their evidence grows.';

CREATE OR REPLACE FUNCTION {{ schema }}.dismiss_review(bank_id text, item text, reason text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(dismiss_review.bank_id);
    key text := _check_text(dismiss_review.item, 'item', 500);
    found_item record;
BEGIN
    PERFORM _check_curator(b);
    SELECT i.item, i.kind, i.fingerprint, i.names INTO found_item FROM _review_items(b) AS i WHERE i.item = key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'item: % is not an item of bank %''s review queue', quote_literal(key), quote_literal(b)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO review_dismissals AS d (bank_id, item, evidence, reason)
    VALUES (b, key, found_item.fingerprint, dismiss_review.reason)
    ON CONFLICT ON CONSTRAINT review_dismissals_pkey DO UPDATE
    SET evidence = excluded.evidence, reason = excluded.reason, dismissed_at = excluded.dismissed_at,
        dismissed_by = excluded.dismissed_by;
    RETURN jsonb_build_object(
        'bank_id', b, 'summary', format('dismiss %s', quote_literal(key)), 'item', key, 'kind', found_item.kind,
        'names', to_jsonb(found_item.names),
        'evidence', found_item.fingerprint, 'reason', dismiss_review.reason
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.dismiss_review(text, text, text) IS
'Curators: dismiss an item of review_queue (by its item key); it stays out of the queue until its evidence grows. '
'Returns what was dismissed.';
