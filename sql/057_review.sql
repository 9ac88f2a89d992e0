-- Review: what an operator should look at, ranked, each with the dry run that
-- would fix it (review_queue), and a way to say "looked, it is fine"
-- (dismiss_review).
--
-- Kinds of item:
-- * likely_duplicate: two entities of the bank whose types do not conflict
--   (the same type, or either untyped) whose folded names are close (pg_trgm similarity at least 0.3)
--   and whose facts share partners (another entity appears in facts of
--   both), or whose names the resolver's screening lets stand for each other
--   only with context (a nickname, an initial, a shorter name the other's
--   words cover: _name_fits, plpython/review.py), which the resolver did not
--   have; or two entities holding one identifying value, whatever their
--   names. Pairs judged distinct (mark_distinct), and pairs a distinguishing
--   attribute tells apart (each holds values of it, none in common), are not
--   items. The fix is the merge of the one with fewer mentions into the other.
-- * likely_over_merge: an entity whose facts fall into two or more groups
--   with no partner in common (facts linked when they share a partner
--   entity), or whose mentions gave two values or more of one identifying or
--   distinguishing attribute (facts grouped by value); the fix is the split
--   of the smaller group's facts.
-- * close_call: a recent decision of the resolver (provenance: mentions
--   decided in the last _close_call_days() days) whose score was within
--   _close_call_margin() of the bank's threshold. Resolved into an entity:
--   the fix is the split of that fact from it. Made a new entity: the fix
--   is the merge of the new entity into the closest name of the bank (or
--   mark_distinct, in the evidence, to say they differ).
--   Also a close call: a recent mention decided `ambiguous` (provenance,
--   enhanced profile: homonyms nothing told apart, or an identifying value
--   held by several entities), placed by the documented rule. A tie, so
--   score 1 (as a decision at the threshold). Its candidates are the other
--   entities of its entity's name and type and the entities holding an
--   identifying value it carries; the evidence lists them with their
--   attributes, the mention's attributes, the explain_mention call that
--   shows the decision again (the fact's other mentions as nearby, its
--   date, type and attributes) and reresolve's dry run of those entities.
--   The fix: the mention is its entity's alone, the merge of that entity
--   into the likeliest candidate (or mark_distinct, to say it is a third);
--   else the split of its fact off the entity, then (`then`) the merge of
--   the split's new entity into the candidate.
-- Evidence is read from the record (unit_entities), not from the flushed
-- statistics, so a fact just written counts at once.
-- Cost: the pairs of close names, and a near miss's closest names, are found
-- by one probe of the bank's trigram index per name (_close_names,
-- _closest_names), and partners by joining the bank's links; a review of a
-- large bank is a batch job, not a request path.
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

CREATE OR REPLACE FUNCTION {{ internal }}._types_compatible(a text, b text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Two entities' types do not conflict: the same type, or either untyped
    -- (an untyped "Florence" may be the place "Florence"); a person and a
    -- place conflict. The review's rule for pairs (duplicates, close calls).
    SELECT _types_compatible.a IS NULL OR _types_compatible.b IS NULL OR _types_compatible.a = _types_compatible.b
$$;

COMMENT ON FUNCTION {{ internal }}._types_compatible(text, text) IS
'Internal: whether two entity types do not conflict in review_queue (equal, or either NULL).';

CREATE OR REPLACE FUNCTION {{ internal }}._name_fits(bank_id text, a text[], b text[])
RETURNS text[]
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ review.name_fits_sql $$;

COMMENT ON FUNCTION {{ internal }}._name_fits(text, text[], text[]) IS
'Internal: for each pair of folded names, how the resolver''s screening lets one stand for the other only with '
'context (initial, variant, covered) or NULL (plpython/review.py); review_queue''s likely duplicates.';

CREATE OR REPLACE FUNCTION {{ internal }}._close_names(bank_id text)
RETURNS TABLE (a_id uuid, b_id uuid, sim float8)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$ review.close_names_sql $$;

COMMENT ON FUNCTION {{ internal }}._close_names(text) IS
'Internal: every two regular entities of a bank whose folded names have trigram similarity at least 0.3, '
'each pair once (smaller id first), found through the bank''s trigram index (plpython/review.py); '
'review_queue''s close names.';

CREATE OR REPLACE FUNCTION {{ internal }}._closest_names(bank_id text, keys text[], floor float8)
RETURNS TABLE (name text, id uuid, sim float8)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$ review.closest_names_sql $$;

COMMENT ON FUNCTION {{ internal }}._closest_names(text, text[], float8) IS
'Internal: for each folded name, every regular entity of a bank whose folded name has trigram similarity at '
'least floor to it, found through the bank''s trigram index (plpython/review.py); review_queue''s close calls.';

CREATE OR REPLACE FUNCTION {{ internal }}._attribute_values(bank_id text, entity_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- What an entity's mentions said of it (the entity_attributes view, which
    -- sql/070 creates after this file: plpgsql reads it when called): each
    -- attribute with its values, {"birth_date": ["1961-05-03"]}; {} if none.
    RETURN (
        SELECT coalesce(jsonb_object_agg(v.attribute, v.vals), '{}')
        FROM (
            SELECT ea.attribute, jsonb_agg(ea.value ORDER BY ea.value) AS vals
            FROM entity_attributes AS ea
            WHERE ea.bank_id = _attribute_values.bank_id AND ea.entity_id = _attribute_values.entity_id
            GROUP BY ea.attribute
        ) AS v
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._attribute_values(text, uuid) IS
'Internal: the attributes an entity''s mentions carried, each with its values (a jsonb object of arrays), '
'for review_queue.';

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
-- Its statements over a bank's links and mentions are estimated past
-- jit_above_cost once the statistics know a larger bank, and compiling them
-- cost 1.15 s of 1.18 s (docs/benchmarks.md); the caller's jit is restored.
SET jit = off
AS $$
DECLARE
    settings jsonb := _effective_settings(_review_items.bank_id);
    threshold float8 := (settings ->> 'threshold')::float8;
    -- A name under the floor is never merged (design §3.4): no closest name.
    floor float8 := (settings ->> 'merge_min_similarity')::float8;
    margin float8 := _close_call_margin();
    -- The attributes the bank reads as identifying (settings.py's attribute
    -- kinds): a value held by an entity makes it a candidate of an ambiguous
    -- mention that carries it.
    identifying text[] := _attribute_names(settings, 'identifying');
    -- And those it reads as distinguishing: one entity, one value.
    distinguishing text[] := _attribute_names(settings, 'distinguishing');
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
    held AS (
        -- The identifying and distinguishing values each entity's mentions
        -- gave (entity_attributes).
        SELECT ea.entity_id AS entity, ea.attribute, ea.value, ea.attribute = ANY(identifying) AS identifying
        FROM entity_attributes AS ea
        WHERE
            ea.bank_id = _review_items.bank_id
            AND (ea.attribute = ANY(identifying) OR ea.attribute = ANY(distinguishing))
    ),
    same_value AS (
        -- Two entities holding one identifying value (one value, one
        -- entity): close whatever their names.
        SELECT x.entity AS a_id, y.entity AS b_id, array_agg(DISTINCT x.attribute ORDER BY x.attribute) AS attributes
        FROM held AS x
        INNER JOIN held AS y ON x.attribute = y.attribute AND x.value = y.value AND x.entity < y.entity
        WHERE x.identifying
        GROUP BY x.entity, y.entity
    ),
    pairs AS (
        -- Close names and values in common, each pair once.
        SELECT u.a_id, u.b_id, max(u.sim) AS sim
        FROM (
            SELECT p.a_id, p.b_id, p.sim FROM _close_names(_review_items.bank_id) AS p
            UNION ALL
            SELECT
                v.a_id, v.b_id,
                {{ trgm_schema }}.similarity(folded(a.canonical_name), folded(b.canonical_name))::float8 AS sim
            FROM same_value AS v
            INNER JOIN entities AS a ON a.bank_id = _review_items.bank_id AND v.a_id = a.id
            INNER JOIN entities AS b ON b.bank_id = _review_items.bank_id AND v.b_id = b.id
            WHERE a.entity_kind = 'regular' AND b.entity_kind = 'regular'
        ) AS u
        GROUP BY u.a_id, u.b_id
    ),
    apart AS (
        -- Pairs a distinguishing attribute tells apart: each holds values of
        -- it, none in common (two people of one name, born years apart).
        SELECT p.a_id, p.b_id
        FROM pairs AS p
        INNER JOIN held AS x ON p.a_id = x.entity
        INNER JOIN held AS y ON p.b_id = y.entity AND x.attribute = y.attribute
        WHERE NOT x.identifying
        GROUP BY p.a_id, p.b_id, x.attribute
        HAVING NOT bool_or(x.value = y.value)
    ),
    close AS (
        SELECT a.id AS a_id, a.canonical_name AS a_name, a.mention_count AS a_count,
            b.id AS b_id, b.canonical_name AS b_name, b.mention_count AS b_count,
            p.sim, v.attributes AS same_values,
            row_number() OVER (ORDER BY a.id, b.id) AS n
        FROM pairs AS p
        INNER JOIN entities AS a ON a.bank_id = _review_items.bank_id AND a.id = p.a_id
        INNER JOIN entities AS b ON b.bank_id = _review_items.bank_id AND b.id = p.b_id
        LEFT JOIN same_value AS v ON p.a_id = v.a_id AND p.b_id = v.b_id
        WHERE
            _types_compatible(a.entity_type, b.entity_type)
            AND NOT _judged_distinct(_review_items.bank_id, a.id, b.id)
            AND NOT EXISTS (SELECT 1 FROM apart AS t WHERE t.a_id = p.a_id AND t.b_id = p.b_id)
    ),
    chunks AS (
        -- The pairs in chunks of 50,000 (n has no gaps): one array of each
        -- side's names per chunk, so that a bank of millions of close pairs
        -- never holds them all in one array (18.7 million at 100,000 entities
        -- of the benchmark's names).
        SELECT
            min(c.n) AS first,
            array_agg(folded(c.a_name) ORDER BY c.n) AS a,
            array_agg(folded(c.b_name) ORDER BY c.n) AS b
        FROM close AS c
        GROUP BY (c.n - 1) / 50000
    ),
    fits AS (
        -- How the names fit beyond their spelling (one call per chunk).
        SELECT f.fit, k.first + f.i - 1 AS n
        FROM chunks AS k
        CROSS JOIN LATERAL unnest(_name_fits(_review_items.bank_id, k.a, k.b)) WITH ORDINALITY AS f (fit, i)
    ),
    fitted AS (
        -- How many names each entity's name fits so (one: the two names fit
        -- each other only, as a bare name that fits a single entity does).
        SELECT x.entity, count(*) AS n
        FROM close AS c
        INNER JOIN fits AS f ON c.n = f.n
        CROSS JOIN LATERAL (VALUES (c.a_id), (c.b_id)) AS x (entity)
        WHERE f.fit IS NOT NULL
        GROUP BY x.entity
    ),
    common AS MATERIALIZED (
        -- The partners each close pair has in common. Joined, not asked pair
        -- by pair: a subquery per pair reads the whole CTE each time (a bank
        -- of 14,000 entities had 250,000 close pairs, and its review did not
        -- end in 14 minutes). Materialized: inlined, it was aggregated again
        -- for every close pair where the pairs were estimated at one (a bank
        -- the statistics did not know yet beside one they did).
        SELECT c.n, count(*) AS shared
        FROM close AS c
        INNER JOIN partners AS p ON p.entity = c.a_id
        INNER JOIN partners AS q ON q.entity = c.b_id AND q.partner = p.partner
        WHERE p.partner NOT IN (c.a_id, c.b_id)
        GROUP BY c.n
    ),
    supported AS (
        SELECT c.*, f.fit,
            f.fit IS NOT NULL AND fa.n = 1 AND fb.n = 1 AS only_fit,
            coalesce(k.shared, 0) AS shared
        FROM close AS c
        INNER JOIN fits AS f ON c.n = f.n
        LEFT JOIN fitted AS fa ON fa.entity = c.a_id
        LEFT JOIN fitted AS fb ON fb.entity = c.b_id
        LEFT JOIN common AS k ON k.n = c.n
    )
    SELECT
        format('likely_duplicate:%s:%s', s.a_id, s.b_id),
        'likely_duplicate'::text,
        -- Name evidence: 1 for two names the resolver's rules read as one
        -- name (a nickname, an initial, a name in short) and that fit no
        -- other name of the bank so, or that hold one identifying value,
        -- else the trigram similarity; times the partners in common, damped.
        round((CASE WHEN s.only_fit OR s.same_values IS NOT NULL THEN 1 ELSE s.sim END
            * (1 + ln(1 + s.shared)))::numeric, 3),
        ARRAY[s.a_id, s.b_id],
        ARRAY[s.a_name, s.b_name],
        jsonb_build_object(
            'why', format('%s and %s: names %s similar%s, %s partner(s) in common',
                quote_literal(s.a_name), quote_literal(s.b_name), round(s.sim::numeric, 2),
                CASE s.fit
                    WHEN 'initial' THEN ', one an initial of the other'
                    WHEN 'variant' THEN ', one a nickname of the other'
                    WHEN 'covered' THEN ', one the other in short'
                    ELSE ''
                END
                || CASE
                    WHEN s.same_values IS NOT NULL THEN format(', the same %s', array_to_string(s.same_values, ', '))
                    ELSE ''
                END, s.shared),
            'name_similarity', round(s.sim::numeric, 3),
            'names_fit', s.fit,
            'names_fit_only_each_other', s.only_fit,
            'identifying_in_common', coalesce(to_jsonb(s.same_values), '[]'),
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
    -- Partners in common support a pair; so do names the resolver would let
    -- stand for each other only with context (_name_fits), and an
    -- identifying value in common.
    WHERE s.shared > 0 OR s.fit IS NOT NULL OR s.same_values IS NOT NULL;

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
    ),
    valued AS (
        -- The facts of an entity by the value its mentions there gave an
        -- identifying or distinguishing attribute.
        SELECT m.entity_id AS entity, a.key AS attribute, a.value, a.key = ANY(distinguishing) AS telling,
            array_agg(DISTINCT m.unit_id ORDER BY m.unit_id) AS units
        FROM mentions AS m
        CROSS JOIN LATERAL jsonb_each_text(m.attributes) AS a (key, value)
        WHERE
            m.bank_id = _review_items.bank_id AND m.attributes IS NOT NULL
            AND (a.key = ANY(identifying) OR a.key = ANY(distinguishing))
        GROUP BY m.entity_id, a.key, a.value
    ),
    by_value AS (
        -- Entities holding two values or more of one attribute, and the facts
        -- of the value given least: one entity has one value of a
        -- distinguishing attribute (two birth dates are two people), and one
        -- value of an identifying one is one entity's (two email addresses
        -- may be two people, or one with two).
        SELECT DISTINCT ON (v.entity) v.entity, v.units AS smallest, cardinality(v.units) AS smallest_n,
            v.n_groups, v.n_facts, v.attribute, v.telling
        FROM (
            SELECT x.entity, x.attribute, x.value, x.telling, x.units,
                count(*) OVER w AS n_groups, sum(cardinality(x.units)) OVER w AS n_facts
            FROM valued AS x
            WINDOW w AS (PARTITION BY x.entity, x.attribute)
        ) AS v
        WHERE v.n_groups >= 2
        ORDER BY v.entity, v.telling DESC, cardinality(v.units), v.attribute, v.value
    ),
    found AS (
        -- The evidence of each entity: groups of partners scored by their
        -- balance (twice the smallest's share); values, by theirs, and one
        -- more for a distinguishing attribute's (a conflict, not a guess).
        SELECT sp.entity, sp.smallest, sp.smallest_n, sp.n_groups, sp.n_facts, NULL::text AS attribute,
            round((sp.smallest_n::numeric / sp.n_facts) * 2, 3) AS score
        FROM split AS sp
        WHERE sp.n_groups >= 2
        UNION ALL
        SELECT b.entity, b.smallest, b.smallest_n, b.n_groups, b.n_facts, b.attribute,
            round(CASE WHEN b.telling THEN 1 ELSE 0 END + (b.smallest_n::numeric / b.n_facts) * 2, 3)
        FROM by_value AS b
    ),
    best AS (
        -- One item per entity: its strongest evidence.
        SELECT DISTINCT ON (f.entity) f.*
        FROM found AS f
        ORDER BY f.entity, f.score DESC, f.attribute NULLS LAST
    )
    SELECT
        format('likely_over_merge:%s', e.id),
        'likely_over_merge'::text,
        sp.score,
        ARRAY[e.id],
        ARRAY[e.canonical_name],
        jsonb_build_object(
            'why', CASE
                WHEN sp.attribute IS NULL
                    THEN format('%s: %s facts in %s groups sharing no partner; the smallest has %s',
                        quote_literal(e.canonical_name), sp.n_facts, sp.n_groups, sp.smallest_n)
                ELSE format('%s: its mentions in %s facts gave %s values of %s; the one given least is in %s',
                    quote_literal(e.canonical_name), sp.n_facts, sp.n_groups, sp.attribute, sp.smallest_n)
            END,
            'attribute', sp.attribute,
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
    FROM best AS sp
    INNER JOIN entities AS e ON e.bank_id = _review_items.bank_id AND sp.entity = e.id;

    RETURN QUERY
    WITH recent AS (
        -- Decisions of the resolver in the window: those it scored near the
        -- threshold (scores compared at 6 decimals, as the resolver compares
        -- them), and those nothing told apart (ambiguous).
        SELECT m.unit_id, m.ordinal, m.mention, m.decision, m.score, m.event_date, m.attributes,
            e.id AS entity, e.canonical_name AS name, e.entity_type, f.fact_id, f.mentions AS elements,
            round((m.score - threshold)::numeric, 6) AS distance,
            EXISTS (
                SELECT 1 FROM mentions AS o
                WHERE o.bank_id = _review_items.bank_id AND o.entity_id = e.id AND o.unit_id <> m.unit_id
            ) AS elsewhere
        FROM mentions AS m
        INNER JOIN entities AS e ON m.bank_id = e.bank_id AND m.entity_id = e.id
        LEFT JOIN facts AS f ON m.bank_id = f.bank_id AND m.unit_id = f.id
        WHERE
            m.bank_id = _review_items.bank_id AND e.entity_kind = 'regular'
            AND m.decided_at >= now() - make_interval(days => _close_call_days())
            AND (
                m.decision = 'ambiguous'
                OR (
                    m.decision IN ('resolved', 'created') AND m.score IS NOT NULL
                    AND abs(round((m.score - threshold)::numeric, 6)) <= round(margin::numeric, 6)
                )
            )
    ),
    closest AS (
        -- The names close to the new entities' names, one probe of the
        -- trigram index per name.
        SELECT k.name, k.id, k.sim
        FROM _closest_names(
            _review_items.bank_id,
            ARRAY(SELECT folded(r.name) FROM recent AS r WHERE r.decision = 'created'),
            floor
        ) AS k
    ),
    calls AS (
        SELECT r.*, c.id AS other, c.canonical_name AS other_name, c.sim,
            -- The facts behind the item's entities: more is new evidence.
            (
                SELECT count(DISTINCT ue.unit_id) FROM unit_entities AS ue
                WHERE ue.bank_id = _review_items.bank_id AND ue.entity_id IN (r.entity, c.id)
            ) AS units
        FROM recent AS r
        -- A new entity's closest name of the bank (one type, or untyped),
        -- not judged distinct from it: the candidate it nearly was.
        LEFT JOIN LATERAL (
            SELECT x.id, x.canonical_name, k.sim
            FROM closest AS k
            INNER JOIN entities AS x ON x.bank_id = _review_items.bank_id AND k.id = x.id
            WHERE
                r.decision = 'created' AND k.name = folded(r.name) AND x.id <> r.entity
                AND _types_compatible(x.entity_type, r.entity_type)
                AND NOT _judged_distinct(_review_items.bank_id, x.id, r.entity)
            ORDER BY k.sim DESC, x.id
            LIMIT 1
        ) AS c ON TRUE
        WHERE r.decision <> 'ambiguous'
    ),
    rivals AS (
        -- What an ambiguous mention could have been: the other entities of
        -- its entity's name and type (homonyms), and the entities of a
        -- compatible type holding an identifying value it carries (one row
        -- per value held). When the mention is its entity's alone, a rival
        -- judged distinct from that entity is settled (the judgement says
        -- the mention is not that one).
        SELECT r.unit_id, r.ordinal, x.id, x.canonical_name, x.homonym IS NOT NULL AS homonym,
            bool_or(c.attribute IS NULL) AS same_name,
            coalesce(jsonb_object_agg(c.attribute, c.value) FILTER (WHERE c.attribute IS NOT NULL), '{}') AS shared
        FROM recent AS r
        CROSS JOIN LATERAL (
            SELECT e.id, NULL::text AS attribute, NULL::text AS value
            FROM entities AS e
            WHERE
                e.bank_id = _review_items.bank_id AND folded(e.canonical_name) = folded(r.name)
                AND coalesce(e.entity_type, '') = coalesce(r.entity_type, '')
            UNION
            SELECT h.entity_id, a.key, a.value
            FROM jsonb_each_text(r.attributes) AS a (key, value)
            INNER JOIN mentions AS h
                ON
                    h.bank_id = _review_items.bank_id AND h.attributes IS NOT NULL
                    AND h.attributes @> jsonb_build_object(a.key, a.value)
            WHERE a.key = ANY(identifying)
        ) AS c
        INNER JOIN entities AS x ON x.bank_id = _review_items.bank_id AND c.id = x.id
        WHERE
            r.decision = 'ambiguous' AND x.id <> r.entity AND x.entity_kind = 'regular'
            AND _types_compatible(x.entity_type, r.entity_type)
            AND (r.elsewhere OR NOT _judged_distinct(_review_items.bank_id, x.id, r.entity))
        GROUP BY r.unit_id, r.ordinal, x.id, x.canonical_name, x.homonym
    ),
    ranked AS (
        -- The rivals of each mention, the likeliest first: one holding an
        -- identifying value it carries, then the one of more mentions.
        SELECT v.*, m.mentions, _attribute_values(_review_items.bank_id, v.id) AS attributes,
            row_number() OVER (
                PARTITION BY v.unit_id, v.ordinal ORDER BY v.shared <> '{}' DESC, m.mentions DESC, v.id
            ) AS n
        FROM rivals AS v
        CROSS JOIN LATERAL (
            SELECT count(*) AS mentions FROM mentions AS h
            WHERE h.bank_id = _review_items.bank_id AND h.entity_id = v.id
        ) AS m
    ),
    ambiguous AS (
        SELECT r.*, first.id AS other, first.canonical_name AS other_name,
            array_agg(v.id ORDER BY v.n) AS others,
            array_agg(v.canonical_name ORDER BY v.n) AS other_names,
            jsonb_agg(jsonb_build_object(
                'entity_id', v.id, 'name', v.canonical_name, 'homonym', v.homonym, 'same_name', v.same_name,
                'mentions', v.mentions, 'attributes', v.attributes, 'identifying_in_common', v.shared,
                'fix', CASE
                    WHEN r.elsewhere THEN format(
                        'SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                        current_schema(), _review_items.bank_id, '<new_entity.entity_id of the split>', v.id)
                    ELSE format('SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                        current_schema(), _review_items.bank_id, r.entity, v.id)
                END,
                'mark_distinct', CASE WHEN NOT r.elsewhere THEN format(
                    'SELECT %I.mark_distinct(%L, %L, %L, dry_run => true);',
                    current_schema(), _review_items.bank_id, r.entity, v.id) END
            ) ORDER BY v.n) AS candidates,
            string_agg(format('%s (%s mention(s)%s%s)', quote_literal(v.canonical_name), v.mentions,
                CASE WHEN v.same_name THEN ', same name and type' ELSE '' END,
                CASE WHEN v.shared <> '{}' THEN ', holds ' || v.shared::text ELSE '' END
                || CASE WHEN v.attributes <> '{}' THEN ', ' || v.attributes::text ELSE '' END), ', ' ORDER BY v.n)
                AS rivals_text,
            (SELECT count(*) FROM mentions AS h WHERE h.bank_id = _review_items.bank_id AND h.entity_id = r.entity)
                AS placed_mentions,
            _attribute_values(_review_items.bank_id, r.entity) AS placed_attributes,
            -- The facts behind the item's entities: more is new evidence.
            (
                SELECT count(DISTINCT ue.unit_id) FROM unit_entities AS ue
                WHERE
                    ue.bank_id = _review_items.bank_id
                    AND ue.entity_id = ANY(array_prepend(r.entity, array_agg(v.id)))
            ) AS units,
            -- The call that shows the decision again: the fact's other
            -- mentions as nearby, its date, the element's type, its attributes.
            format('SELECT * FROM %I.explain_mention(%L, %L, %L::text[], %L::timestamptz, %L, %L::jsonb);',
                current_schema(), _review_items.bank_id, r.mention,
                ARRAY(
                    SELECT o.mention FROM mentions AS o
                    WHERE o.bank_id = _review_items.bank_id AND o.unit_id = r.unit_id AND o.ordinal <> r.ordinal
                    ORDER BY o.ordinal
                )::text,
                r.event_date,
                CASE
                    WHEN jsonb_typeof(r.elements -> (r.ordinal - 1)) = 'object'
                        AND r.elements -> (r.ordinal - 1) ->> 'text' = r.mention
                        THEN r.elements -> (r.ordinal - 1) ->> 'type'
                END,
                r.attributes) AS explain
        FROM recent AS r
        INNER JOIN ranked AS v ON r.unit_id = v.unit_id AND r.ordinal = v.ordinal
        INNER JOIN ranked AS first ON r.unit_id = first.unit_id AND r.ordinal = first.ordinal AND first.n = 1
        WHERE r.decision = 'ambiguous'
        GROUP BY r.unit_id, r.ordinal, r.mention, r.decision, r.score, r.event_date, r.attributes, r.entity, r.name,
            r.entity_type, r.fact_id, r.elements, r.distance, r.elsewhere, first.id, first.canonical_name
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
    WHERE (c.decision = 'created' AND c.other IS NOT NULL) OR (c.decision = 'resolved' AND c.elsewhere)
    UNION ALL
    SELECT
        format('close_call:%s:%s', a.unit_id, a.ordinal),
        'close_call'::text,
        -- Nothing told the candidates apart: a tie, as close as a call gets
        -- (a decision at the threshold).
        1.000::numeric,
        array_prepend(a.entity, a.others),
        array_prepend(a.name, a.other_names),
        jsonb_build_object(
            'why', format(
                '%s in %s (%s) was ambiguous, placed by the rule in %s (%s); nothing told it apart from %s',
                quote_literal(a.mention), coalesce('fact ' || quote_literal(a.fact_id), 'unit ' || a.unit_id),
                coalesce('attributes ' || a.attributes::text, 'no attributes'), quote_literal(a.name),
                CASE
                    WHEN a.elsewhere THEN format('%s other mention(s)', a.placed_mentions - 1)
                    ELSE 'made for it, no other mention'
                END || CASE WHEN a.placed_attributes <> '{}' THEN ', ' || a.placed_attributes::text ELSE '' END,
                a.rivals_text),
            'mention', a.mention,
            'unit_id', a.unit_id,
            'fact_id', a.fact_id,
            'ordinal', a.ordinal,
            'decision', a.decision,
            'score', round(a.score::numeric, 6),
            'threshold', threshold,
            'attributes', a.attributes,
            'placed', jsonb_build_object(
                'entity_id', a.entity, 'name', a.name, 'holds_other_mentions', a.elsewhere,
                'mentions', a.placed_mentions, 'attributes', a.placed_attributes
            ),
            'candidates', a.candidates,
            -- Split first, then merge the split's new entity (its id is in
            -- the split's result) into the one it belongs to.
            'then', CASE WHEN a.elsewhere THEN a.candidates -> 0 ->> 'fix' END,
            'or', CASE WHEN NOT a.elsewhere THEN a.candidates -> 0 ->> 'mark_distinct' END,
            'reresolve', format('SELECT %I.reresolve(%L, entity_ids => %L::uuid[], dry_run => true);',
                current_schema(), _review_items.bank_id, array_prepend(a.entity, a.others)::text),
            'explain', a.explain
        ),
        a.units::numeric,
        -- The mention is not its entity's alone: split it off (and merge the
        -- split into a candidate). It is: merge its entity into a candidate.
        CASE
            WHEN a.elsewhere
                THEN format('SELECT %I.split_entity(%L, %L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                    current_schema(), _review_items.bank_id, a.entity, a.unit_id, a.mention || ' (split)')
            ELSE format('SELECT %I.merge_entities(%L, ARRAY[%L]::uuid[], %L, dry_run => true);',
                current_schema(), _review_items.bank_id, a.entity, a.other)
        END
    FROM ambiguous AS a;
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
    -- best first; among equal scores by kind and names (sorted), so that
    -- the same bank replayed, whose entity ids are new, lists the same
    -- items (the item, which holds ids, only breaks what is left).
    RETURN QUERY
    SELECT i.item, i.kind, i.score, i.entity_ids, i.names, i.evidence, i.fix
    FROM _review_items(b) AS i
    WHERE NOT EXISTS (
        SELECT 1 FROM review_dismissals AS d
        WHERE d.bank_id = b AND d.item = i.item AND d.evidence >= i.fingerprint
    )
    ORDER BY i.score DESC, i.kind, ARRAY(SELECT x.name FROM unnest(i.names) AS x (name) ORDER BY 1), i.item
    LIMIT n;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.review_queue(text, integer) IS
'What an operator should review, best first: likely duplicates (close names of one type, partners in common or an '
'identifying value, not judged distinct or told apart by a distinguishing value), likely over-merges (facts in '
'groups sharing no partner, or giving two values of one attribute) and close calls (recent decisions '
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
