-- Re-resolution: the stored facts of a bank decided again by the resolver,
-- against the bank as it now stands (reresolve).
--
-- Why: the resolver decides a fact once, with what the bank knew then. A bare
-- "Alex" stored before "Alex Kim" was known became an entity of its own; once
-- Alex Kim's facts share its context, the same fact would resolve to him.
--
-- How, fact by fact, in a documented order (event_date, facts without one
-- last; then the order they were stored: created_at, stored_order, id; a
-- fact's mentions by position):
--   1. leave the fact out (_reresolve_leave_out, in a subtransaction
--      _reresolve_decide rolls back): its provenance and links go, the
--      numbers of their entities are recounted, and an entity left with
--      nothing goes, as the flush would remove it. Where the fact's
--      entities and their pairs hold the record's numbers (all but the
--      entities _reresolve_unrecorded names, once per plan), only the
--      numbers a decision reads are changed, by the fact's own: the same
--      decisions, without reading every mention and unit of every entity
--      or writing a row version per number;
--   2. decide it: the resolver's own pipeline on the fact as stored (the
--      trigger's, plpython/reresolve.py), writing nothing; a name's trigram
--      probe is read once per plan and kept for its later facts, less the
--      entities gone since (no entity is created or renamed during a plan);
--   3. move each mention whose entity changed (_reresolve_move), unless it is
--      a fixed point; the facts after it see the move.
-- With reresolve_replay (below), a plan of the whole bank first replays it: every
-- fact decided again from nothing in event order, its clusters placed on the
-- bank's entities (an entity made for a cluster none is left for) and its
-- mentions moved there, each of those entities given the replay's name (not
-- one an operator named); the steps above then run on the bank it made. The
-- entities are made and named before any probe is kept, so the probes' memo
-- still sees no entity made or renamed during the steps.
-- Fixed points. Re-resolution never undoes an operator's merge, split, rename
-- or alias: it moves mentions and nothing else (no entity is renamed, given
-- or stripped of an alias; one is merged only as all its mentions moved, by
-- the bank setting reresolve_entities, below), and it does not decide again
-- a mention an operator placed (decision operator: merge, split), one
-- resolved through an alias (an operator's name, or a merged entity's), a
-- literal or a label (exact by rule). A move between two entities judged distinct is not made:
-- the operator said they are different things. A mention that would now make
-- a new entity stays where it is (splitting is the operator's call; a replay
-- makes one only for mentions it holds apart from every entity). Units
-- that are not facts (retain, resolve calls) are not decided again: their
-- input (nearby names) is not stored.
--
-- The plan is made by running the moves in a subtransaction that is rolled
-- back (_reresolve_plan): so the dry run shows exactly what applying does,
-- and writes nothing. Both take the bank's lock exclusive (a correction's
-- lock: writers wait, none is in flight), because the plan writes while it
-- runs. Applied, it is one correction (sql/050_corrections.sql): ledgered with
-- a before-image, undone by undo_operation (_undo_reresolve, sql/054_undo.sql).

-- Which decisions re-resolution makes again: the resolver's own (resolved
-- by score, created, or taken from the call's memory). The others are fixed
-- points: placed by an operator, through an alias, or exact by rule
-- (literal, label).
CREATE OR REPLACE FUNCTION {{ internal }}._redecidable(decision text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _redecidable.decision IN ('resolved', 'created', 'memory', 'identifier', 'ambiguous')
$$;

COMMENT ON FUNCTION {{ internal }}._redecidable(text) IS
'Internal (reresolve): whether a mention''s decision is one re-resolution makes again (the resolver''s own).';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_fact(bank_id text, unit_id uuid)
RETURNS TABLE (
    ordinal integer,
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8,
    decision text,
    untold boolean,
    leaning uuid,
    by_score boolean
)
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ reresolve.decide_fact_sql $$;

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_fact(bank_id text, unit_id uuid, plan_id text, keep boolean)
RETURNS TABLE (
    ordinal integer,
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8,
    decision text,
    untold boolean,
    leaning uuid,
    by_score boolean
)
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ reresolve.decide_plan_fact_sql $$;

COMMENT ON FUNCTION {{ internal }}._reresolve_fact(text, uuid, text, boolean) IS
'Internal (reresolve): _reresolve_fact within a plan (plan_id): a name''s trigram probe is read once per plan '
'and kept (keep: the fact''s left-out removed no entity), then read again only for what is gone since.';

COMMENT ON FUNCTION {{ internal }}._reresolve_fact(text, uuid) IS
'Internal (reresolve): what the resolver decides now for each mention of a stored fact (the facts trigger''s '
'pipeline, writing nothing); no entity_id where it would create one.';

-- Which entities of the bank do not hold the record's numbers: one whose
-- mention count, first or last seen is not its mentions', or an end of a
-- pair whose kept count is not the number of units linking the two (an
-- import, a graph written by hand); all of them (NULL) while statistics of
-- the bank are queued. Once per plan: the plan's moves recount from the
-- record, so an entity that held the record's numbers at the start still
-- does, and the set stays a cover.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_unrecorded(bank_id text)
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM stats_queue AS q WHERE q.bank_id = _reresolve_unrecorded.bank_id) THEN NULL
        ELSE ARRAY(
            SELECT x.id
            FROM _pair_stats(_reresolve_unrecorded.bank_id) AS r,
                LATERAL (VALUES (r.entity_id_1), (r.entity_id_2)) AS x (id)
            WHERE r.kept_count <> r.count
            UNION
            -- Nothing is queued here, so kept is applied.
            SELECT r.id
            FROM _entity_stats(_reresolve_unrecorded.bank_id) AS r
            WHERE (r.kept_count, r.kept_first, r.kept_last) IS DISTINCT FROM (r.count, r.first_seen, r.last_seen)
            ORDER BY 1
        )
    END
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_unrecorded(text) IS
'Internal (reresolve): the entities whose numbers, or one of whose pairs'' kept count, are not the record''s (NULL: '
'every entity, while statistics of the bank are queued).';

-- The same cover for some entities only (those of a scoped plan's facts: a
-- fact's left-out asks only about its own entities): each entity's numbers
-- and pairs, kept and recounted from its own mentions and units, instead of
-- every entity and pair of the bank
-- (which a plan of a few facts, reresolve_queued's, would pay per call
-- whatever the bank's size). Equal to _reresolve_unrecorded(bank_id) within
-- entity_ids (tested).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_unrecorded(bank_id text, entity_ids uuid[])
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM stats_queue AS q WHERE q.bank_id = _reresolve_unrecorded.bank_id) THEN NULL
        ELSE ARRAY(
            SELECT s.id FROM unnest(_reresolve_unrecorded.entity_ids) AS s (id)
            WHERE EXISTS (
                SELECT 1
                FROM (
                    SELECT
                        CASE WHEN c.entity_id_1 = s.id THEN c.entity_id_2 ELSE c.entity_id_1 END AS other,
                        c.cooccurrence_count AS n
                    FROM entity_cooccurrences AS c
                    WHERE
                        c.bank_id = _reresolve_unrecorded.bank_id
                        AND (c.entity_id_1 = s.id OR c.entity_id_2 = s.id)
                ) AS k
                FULL JOIN (
                    SELECT
                        y.entity_id AS other,
                        count(*) AS n
                    FROM unit_entities AS x
                    INNER JOIN unit_entities AS y
                        ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND x.entity_id <> y.entity_id
                    WHERE x.bank_id = _reresolve_unrecorded.bank_id AND x.entity_id = s.id
                    GROUP BY y.entity_id
                ) AS r ON k.other = r.other
                WHERE coalesce(k.n, 0) <> coalesce(r.n, 0)
            ) OR EXISTS (
                SELECT 1
                FROM entities AS e,
                    LATERAL (
                        SELECT count(*) AS n, min(m.event_date) AS first_seen, max(m.event_date) AS last_seen
                        FROM mentions AS m
                        WHERE m.bank_id = _reresolve_unrecorded.bank_id AND m.entity_id = e.id
                    ) AS r
                WHERE
                    e.bank_id = _reresolve_unrecorded.bank_id AND e.id = s.id
                    AND (e.mention_count, e.first_seen, e.last_seen) IS DISTINCT FROM (r.n, r.first_seen, r.last_seen)
            )
            GROUP BY s.id
            ORDER BY s.id
        )
    END
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_unrecorded(text, uuid[]) IS
'Internal (reresolve): _reresolve_unrecorded(bank_id) within entity_ids, reading only their pairs and units.';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_leave_out(bank_id text, unit_id uuid, unrecorded uuid[])
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_leave_out.bank_id;
    u uuid := _reresolve_leave_out.unit_id;
    touched uuid[];
    kept uuid[];
    linked uuid[];
    own_ids uuid[];
    own_n bigint[];
    own_last timestamptz[];
BEGIN
    -- The fact's own contribution out of the bank (the caller rolls it back):
    -- its provenance and links, the numbers they made, and the entities only
    -- it held. Returns the ids of those entities. One statement deletes both
    -- and reads what the rest needs: the entities touched, those a fixed
    -- mention holds (an operator's: it stays a candidate for the fact's
    -- other mentions), the linked ones, and per entity the fact's own
    -- mentions (how many, and their last date).
    WITH gone_mentions AS (
        DELETE FROM mentions AS m WHERE m.bank_id = b AND m.unit_id = u
        RETURNING m.entity_id, m.decision, m.event_date
    ),
    gone_links AS (
        DELETE FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.unit_id = u
        RETURNING ue.entity_id
    )
    SELECT
        ARRAY(SELECT g.entity_id FROM gone_mentions AS g UNION SELECT l.entity_id FROM gone_links AS l),
        ARRAY(SELECT DISTINCT g.entity_id FROM gone_mentions AS g WHERE NOT _redecidable(g.decision)),
        ARRAY(SELECT l.entity_id FROM gone_links AS l),
        o.ids, o.n, o.last_seen
    INTO touched, kept, linked, own_ids, own_n, own_last
    FROM (
        SELECT array_agg(g.entity_id) AS ids, array_agg(g.n) AS n, array_agg(g.last_seen) AS last_seen
        FROM (
            SELECT x.entity_id, count(*) AS n, max(x.event_date) AS last_seen
            FROM gone_mentions AS x
            GROUP BY x.entity_id
        ) AS g
    ) AS o;
    IF _reresolve_leave_out.unrecorded IS NULL OR touched && _reresolve_leave_out.unrecorded THEN
        PERFORM _recount(b, touched, TRUE);
        RETURN _remove_orphans(
            b, ARRAY(SELECT t.id FROM unnest(touched) AS t (id) WHERE t.id <> ALL(kept)), '[]'
        );
    END IF;
    -- Every entity touched holds the record's numbers and every pair of them
    -- the record's count (none is unrecorded). Then the fact left out changes
    -- only what a decision reads, and writes only that: an update inside the
    -- plan's long transaction cannot be pruned until it ends, so each one
    -- leaves a row version behind, and index entries once a page is full
    -- (measured: recounting every touched entity and pair, 61 s of a 10,000
    -- fact plan; without the left-out's writes, 33 s). A decision reads an
    -- entity's last_seen (probe.py, reresolve.py's plan probes), never its
    -- mention count or first seen, and a pair only where its count is above
    -- zero. So: last_seen read again where the fact's own date was it (another
    -- mention may share it), the pairs only this fact made deleted, and the
    -- rest left as it is, which the caller rolls back anyway. The plans equal
    -- those of the whole recount (tests/db/test_reresolve_left_out.py).
    WITH latest AS (
        SELECT
            o.id,
            (SELECT max(m.event_date) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = o.id) AS last_seen
        FROM unnest(own_ids, own_last) AS o (id, last_seen)
        INNER JOIN entities AS e ON e.bank_id = b AND o.id = e.id
        WHERE o.last_seen >= e.last_seen
    )

    UPDATE entities AS e
    SET last_seen = latest.last_seen
    FROM latest
    WHERE e.bank_id = b AND e.id = latest.id AND e.last_seen IS DISTINCT FROM latest.last_seen;
    DELETE FROM entity_cooccurrences AS c
    WHERE
        c.bank_id = b AND c.entity_id_1 = ANY(linked) AND c.entity_id_2 = ANY(linked)
        AND c.cooccurrence_count <= 1;
    -- Only an entity the fact held every mention of can be an orphan: most
    -- facts leave none, and need no look for them.
    touched := ARRAY(
        SELECT e.id
        FROM entities AS e
        LEFT JOIN unnest(own_ids, own_n) AS o (id, n) ON e.id = o.id
        WHERE
            e.bank_id = b AND e.id = ANY(touched) AND e.id <> ALL(kept)
            AND e.mention_count - coalesce(o.n, 0) = 0
    );
    IF cardinality(touched) = 0 THEN
        RETURN '[]';
    END IF;
    RETURN _remove_orphans(b, touched, '[]');
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_leave_out(text, uuid, uuid[]) IS
'Internal (reresolve): take a stored fact''s own contribution out of the bank (provenance, links, the numbers '
'they made, the entities only it held; the caller rolls it back). Entities in unrecorded (NULL: all) are '
'recounted from the record; otherwise the fact''s pairs are subtracted. Returns the removed ids.';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_decide(
    bank_id text, unit_id uuid, unrecorded uuid[] DEFAULT NULL, plan_id text DEFAULT NULL, others uuid[] DEFAULT '{}'
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_decide.bank_id;
    u uuid := _reresolve_decide.unit_id;
    gone jsonb := '[]';
    o uuid;
    result jsonb;
BEGIN
    -- A fact is decided as if it arrived now: without its own mentions,
    -- links and the numbers they made, which would vote for the entity it
    -- went to. In a subtransaction rolled back: nothing of it stays.
    BEGIN
        IF cardinality(_reresolve_decide.others) > 0 THEN
            -- Several facts left out (a form decided apart): every number
            -- they made recounted (NULL: no entity is assumed to hold the
            -- record's numbers), since the quick left-out undoes one fact's
            -- pairs only.
            FOREACH o IN ARRAY _reresolve_decide.others || u LOOP
                gone := gone || _reresolve_leave_out(b, o, NULL);
            END LOOP;
        ELSE
            gone := _reresolve_leave_out(b, u, _reresolve_decide.unrecorded);
        END IF;
        IF _reresolve_decide.plan_id IS NULL THEN
            result := jsonb_build_object('decided', (
                SELECT coalesce(jsonb_agg(to_jsonb(d) ORDER BY d.ordinal), '[]') FROM _reresolve_fact(b, u) AS d
            ));
        ELSE
            result := jsonb_build_object('decided', (
                SELECT coalesce(jsonb_agg(to_jsonb(d) ORDER BY d.ordinal), '[]')
                FROM _reresolve_fact(b, u, _reresolve_decide.plan_id, gone = '[]') AS d
            ));
        END IF;
        result := result || jsonb_build_object('left_out', gone);
        RAISE SQLSTATE 'ER900' USING MESSAGE = 'reresolve: the facts left out are put back';
    EXCEPTION
        WHEN SQLSTATE 'ER900' THEN
            NULL;
    END;
    RETURN result;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_decide(text, uuid, uuid[], text, uuid[]) IS
'Internal (reresolve): a stored fact decided again without its own contribution and that of the facts others '
'(_reresolve_leave_out, in a subtransaction rolled back), with the probes of the plan plan_id (NULL: none): '
'{decided, left_out}. Entities in unrecorded (NULL: all) are recounted from the record; with others, all are.';

-- One decision of a fact decided again (_reresolve_decide's decided), by
-- its mention's ordinal: the columns of _reresolve_fact.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_decided(decided jsonb, mention_ordinal integer)
RETURNS TABLE (
    ordinal integer, entity_id uuid, canonical_name text, created boolean, score float8, decision text,
    untold boolean, leaning uuid, by_score boolean
)
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT d.*
    FROM jsonb_to_recordset(_reresolve_decided.decided -> 'decided') AS d (
        ordinal integer, entity_id uuid, canonical_name text, created boolean, score float8, decision text,
        untold boolean, leaning uuid, by_score boolean
    )
    WHERE d.ordinal = _reresolve_decided.mention_ordinal
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_decided(jsonb, integer) IS
'Internal (reresolve): the decision for the mention at mention_ordinal in a result of _reresolve_decide.';

-- A form decided apart (the bank setting reresolve_entities, issue 32). Left
-- out alone, a fact still meets the other facts that put the same form on
-- the same entity, and their partners vote for it: three facts of Wei Chen
-- ("Wei" next to her robotics club) placed on Wei Hughes by arrival give him
-- her partners, so each of them, decided again, finds the two others' club
-- on both Weis and stays. Decided without all of them (their contributions
-- recounted, in a subtransaction rolled back), the club is hers alone again.
-- The other facts are those holding a mention of the same lower() form on
-- the same entity, each the resolver's own decision (an operator's placement
-- is evidence that stands).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_form_facts(
    bank_id text, entity_id uuid, mention text, unit_id uuid
)
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT coalesce(array_agg(DISTINCT x.unit_id ORDER BY x.unit_id), '{}')
    FROM mentions AS x
    WHERE
        x.bank_id = _reresolve_form_facts.bank_id AND x.entity_id = _reresolve_form_facts.entity_id
        AND folded(x.mention) = folded(_reresolve_form_facts.mention)
        AND x.unit_id <> _reresolve_form_facts.unit_id AND _redecidable(x.decision)
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_form_facts(text, uuid, text, uuid) IS
'Internal (reresolve, reresolve_entities): the other facts holding the same lower() form of a mention on the same '
'entity, each placed by the resolver.';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_move(bank_id text, unit_id uuid, moves jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_move.bank_id;
    u uuid := _reresolve_move.unit_id;
    mv record;
    froms uuid[];
    tos uuid[];
BEGIN
    -- Moves of one fact's mentions ({ordinal, to, decision, score}): the
    -- provenance says what the resolver decided now, the fact links the
    -- entities its mentions went to, the numbers follow the record.
    froms := ARRAY(
        SELECT DISTINCT m.entity_id FROM mentions AS m
        WHERE
            m.bank_id = b AND m.unit_id = u
            AND m.ordinal IN (SELECT (x ->> 'ordinal')::integer FROM jsonb_array_elements(_reresolve_move.moves) AS x)
    );
    tos := ARRAY(SELECT DISTINCT (x ->> 'to')::uuid FROM jsonb_array_elements(_reresolve_move.moves) AS x);
    -- One row at a time: moves are few, and Citus refuses an UPDATE joined
    -- to the rows of a set-returning function.
    FOR mv IN
        SELECT * FROM jsonb_to_recordset(_reresolve_move.moves) AS x (ordinal integer, "to" uuid, decision text,
            score float8)
    LOOP
        UPDATE mentions AS m
        SET entity_id = mv."to", decision = mv.decision, score = mv.score, decided_at = now()
        WHERE m.bank_id = b AND m.unit_id = u AND m.ordinal = mv.ordinal;
    END LOOP;
    -- New links first (dated as the fact's other links), then the links no
    -- mention of the fact holds any more.
    PERFORM _relink_mentions(b, ARRAY[u], tos);
    DELETE FROM unit_entities AS ue
    WHERE
        ue.bank_id = b AND ue.unit_id = u AND ue.entity_id = ANY(froms)
        AND NOT EXISTS (
            SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.unit_id = u AND m.entity_id = ue.entity_id
        );
    PERFORM _recount(b, froms || tos, TRUE);
    -- An entity left with nothing goes, as the flush would remove it; one
    -- an operator judged stays, with its judgement.
    RETURN _remove_orphans(
        b,
        ARRAY(
            SELECT f.id FROM unnest(froms) AS f (id)
            WHERE NOT EXISTS (
                SELECT 1 FROM entity_judgements AS j
                WHERE j.bank_id = b AND (j.entity_a = f.id OR j.entity_b = f.id)
            )
        ),
        '[]'
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_move(text, uuid, jsonb) IS
'Internal (reresolve): move mentions of one fact to the entities decided now: provenance, links, recount; an entity '
'left with nothing (not curated, not judged) is removed. Returns the removed ids.';

-- Whole entities (the bank setting reresolve_entities, issue 32). A fact
-- decided again still finds the entity it made: "Bob Smith", created before
-- the bank knew Robert Smith, holds its three facts, and each of them, left
-- out in turn, meets the other two by an identical name. So after the facts,
-- such an entity is left out whole (deleted, in a subtransaction rolled
-- back) and its mentions decided again in their facts' order; where every
-- one goes to one existing entity, they all move there and the entity goes
-- (a merge made of moves, undone as the plan's other moves are). Which
-- entities: made of one name by the resolver alone (two or more mentions,
-- each the resolver's decision, each spelling that name, none with
-- attributes), with no alias or judgement, not renamed by an operator
-- (curated), and the only entity of its name
-- (homonyms were made apart on purpose: left out, the other would take
-- their mentions by the identical name). An entity with a mention this plan
-- already moved is left as it is (a mention moves once per plan). Smaller
-- entities first, then the newest: the smaller moves into the larger, and of
-- two as large the one the bank knew first stays (its name with it).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_whole(bank_id text, entity_id uuid)
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT EXISTS (
        SELECT 1
        FROM entities AS e
        WHERE
            e.bank_id = _reresolve_whole.bank_id AND e.id = _reresolve_whole.entity_id
            AND e.entity_kind = 'regular' AND e.homonym IS NULL AND NOT e.curated
            AND NOT EXISTS (
                SELECT 1 FROM entity_aliases AS a WHERE a.bank_id = e.bank_id AND a.entity_id = e.id
            )
            AND NOT EXISTS (
                SELECT 1 FROM entity_judgements AS j
                WHERE j.bank_id = e.bank_id AND (j.entity_a = e.id OR j.entity_b = e.id)
            )
            AND NOT EXISTS (
                SELECT 1 FROM entities AS x
                WHERE x.bank_id = e.bank_id AND folded(x.canonical_name) = folded(e.canonical_name) AND x.id <> e.id
            )
            AND (
                SELECT count(*) >= 2 AND bool_and(
                    _redecidable(m.decision) AND m.attributes IS NULL
                    AND folded(m.mention) = folded(e.canonical_name)
                )
                FROM mentions AS m
                WHERE m.bank_id = e.bank_id AND m.entity_id = e.id
            )
    )
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_whole(text, uuid) IS
'Internal (reresolve, reresolve_entities): whether an entity is decided again as a whole: made of its one name by '
'the resolver alone (two or more mentions, no attributes), without alias, judgement, rename (curated) or another '
'entity of its name.';

-- The entities a plan may decide again whole, in the order it does: of its
-- scope (entity_ids, NULL: all) with a mention in its facts (units), smaller
-- entities first, then the newest.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_whole_scope(bank_id text, entity_ids uuid[], units uuid[])
RETURNS TABLE (id uuid, canonical_name text)
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT e.id, e.canonical_name
    FROM entities AS e
    WHERE
        e.bank_id = _reresolve_whole_scope.bank_id
        AND (_reresolve_whole_scope.entity_ids IS NULL OR e.id = ANY(_reresolve_whole_scope.entity_ids))
        AND EXISTS (
            SELECT 1 FROM mentions AS p
            WHERE p.bank_id = e.bank_id AND p.entity_id = e.id AND p.unit_id = ANY(_reresolve_whole_scope.units)
        )
    ORDER BY e.mention_count, e.first_seen DESC, e.id
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_whole_scope(text, uuid[], uuid[]) IS
'Internal (reresolve, reresolve_entities): the entities of a plan''s scope with a mention in its facts, in the '
'order whole entities are decided again (smaller first, then the newest).';

-- reresolve_entities = "auto" (the default): whole entities and forms apart
-- are decided where a plan has at most this many entities to decide whole.
-- Each costs about one fact's decision, and few move: on the benchmark's
-- bank of 14,121 entities, 8,212 were left out in turn for 3 moves, 40 s
-- (docs/benchmarks.md). A memory of a few thousand entities, or a plan
-- scoped to some entities, stays under a few seconds of it.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_whole_auto_max()
RETURNS integer
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT 1000
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_whole_auto_max() IS
'Internal (reresolve): under reresolve_entities = "auto", the most entities a plan may have to decide again whole '
'(_reresolve_whole) for it to do so, and to decide forms apart.';

-- Whether a plan decides whole entities again and forms apart: the bank's
-- reresolve_entities, and under "auto" whether its scope has at most
-- _reresolve_whole_auto_max() entities to decide whole (counted up to one
-- more, before the plan moves anything). Not the queue's plans under
-- "auto" (queued: reresolve_queued): each decides the neighbourhood of a
-- few new facts, some 170 facts, and with whole entities took 7 times as
-- long (3.7 s a call against 0.5, docs/benchmarks.md), at the rate facts
-- are written.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_entities_on(
    bank_id text, entity_ids uuid[], units uuid[], queued boolean
)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    setting text := _effective_settings(_reresolve_entities_on.bank_id) ->> 'reresolve_entities';
    most integer := _reresolve_whole_auto_max();
BEGIN
    IF setting IS DISTINCT FROM 'auto' THEN
        RETURN coalesce(setting::boolean, FALSE);
    END IF;
    IF _reresolve_entities_on.queued THEN
        RETURN FALSE;
    END IF;
    RETURN (
        SELECT count(*)
        FROM (
            SELECT 1
            FROM _reresolve_whole_scope(_reresolve_entities_on.bank_id, _reresolve_entities_on.entity_ids, units) AS w
            WHERE _reresolve_whole(_reresolve_entities_on.bank_id, w.id)
            LIMIT most + 1
        ) AS x
    ) <= most;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_entities_on(text, uuid[], uuid[], boolean) IS
'Internal (reresolve): whether a plan of these entities (NULL: all) and facts decides whole entities again and '
'forms apart: the bank setting reresolve_entities, and under "auto" at most _reresolve_whole_auto_max() of them, '
'not in a queued plan (reresolve_queued).';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_entity_decide(bank_id text, entity_id uuid, plan_id text)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_entity_decide.bank_id;
    own record;
    now_is record;
    target uuid;
    decided jsonb := '[]';
    owned jsonb;
    result jsonb;
    gone bigint;
BEGIN
    -- The entity's mentions decided again without it (deleted with what
    -- holds it, in a subtransaction rolled back), in their facts' order,
    -- until one would become a new entity, go to the bare entity (or an
    -- initial's) as nothing told it apart (untold), or go elsewhere than the
    -- first:
    -- {to, name, mentions: [{unit_id, fact_id, ordinal, mention, decision,
    -- score}]} when all go to one entity, NULL otherwise.
    BEGIN
        owned := (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                'unit_id', m.unit_id, 'fact_id', f.fact_id, 'ordinal', m.ordinal, 'mention', m.mention
            ) ORDER BY f.event_date, f.created_at, f.stored_order, f.id, m.ordinal), '[]')
            FROM mentions AS m
            -- Each mention's fact by its key (a fence: a bank the statistics
            -- do not know was read whole for each mention).
            CROSS JOIN LATERAL (  -- noqa: ST05
                SELECT x.fact_id, x.event_date, x.created_at, x.stored_order, x.id
                FROM facts AS x
                WHERE x.bank_id = b AND x.id = m.unit_id
                OFFSET 0
            ) AS f  -- noqa: AM09
            WHERE m.bank_id = b AND m.entity_id = _reresolve_entity_decide.entity_id
        );
        -- Its provenance and links first: a bank-bound role may delete an
        -- orphan only (the policy orphans_only), and the cascade would
        -- otherwise leave the entity in place, to be found by its own name.
        DELETE FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = _reresolve_entity_decide.entity_id;
        DELETE FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = _reresolve_entity_decide.entity_id;
        DELETE FROM entities AS e WHERE e.bank_id = b AND e.id = _reresolve_entity_decide.entity_id;
        GET DIAGNOSTICS gone = ROW_COUNT;
        result := NULL;
        IF gone <> 1 THEN
            -- Not left out (a policy kept it): found again by its own name,
            -- it would seem to move to itself. Nothing is decided whole.
            RAISE SQLSTATE 'ER900' USING MESSAGE = 'reresolve: the entity could not be left out';
        END IF;
        FOR own IN
            SELECT (x ->> 'unit_id')::uuid AS unit_id, x ->> 'fact_id' AS fact_id, (x ->> 'ordinal')::integer AS ordinal,
                x ->> 'mention' AS mention
            FROM jsonb_array_elements(owned) WITH ORDINALITY AS t (x, i)
            ORDER BY t.i
        LOOP
            SELECT * INTO now_is
            FROM _reresolve_fact(b, own.unit_id, _reresolve_entity_decide.plan_id, FALSE) AS d
            WHERE d.ordinal = own.ordinal;
            IF NOT FOUND OR now_is.created OR now_is.entity_id IS NULL OR now_is.untold
                OR (target IS NOT NULL AND now_is.entity_id <> target) THEN
                target := NULL;
                EXIT;
            END IF;
            target := now_is.entity_id;
            result := jsonb_build_object('to', target, 'name', now_is.canonical_name);
            decided := decided || jsonb_build_object(
                'unit_id', own.unit_id, 'fact_id', own.fact_id, 'ordinal', own.ordinal, 'mention', own.mention,
                'decision', now_is.decision, 'score', now_is.score
            );
        END LOOP;
        IF target IS NOT NULL THEN
            result := result || jsonb_build_object('mentions', decided);
        ELSE
            result := NULL;
        END IF;
        RAISE SQLSTATE 'ER900' USING MESSAGE = 'reresolve: the entity left out is put back';
    EXCEPTION
        WHEN SQLSTATE 'ER900' THEN
            NULL;
    END;
    RETURN result;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_entity_decide(text, uuid, text) IS
'Internal (reresolve, reresolve_entities): an entity''s mentions decided again without it (in a subtransaction '
'rolled back): {to, name, mentions} when every one goes to one other entity, else NULL.';

-- A replay in event order (the bank setting reresolve_replay; the why is in
-- plpython/reresolve.py). Every fact of the bank decided again from nothing,
-- in event order (event_date, then the application's fact_id, then id: no
-- part of it is the order facts were stored in), in a subtransaction rolled
-- back: their contributions forgotten as forget_unit would (flushed: an
-- entity left with nothing goes, one an operator created or named stays),
-- then the facts resolved and linked as the facts trigger does, 500 to a
-- statement as an import writes them (a batch decides as fact by fact does),
-- each batch flushed as its commit would. Returns where each mention went,
-- in the replay's order, and the entities it went to: {mentions: [[unit_id,
-- ordinal, entity_id, decision, score], ...], entities: [rows]} (an entity
-- the replay made is gone with it; its id is free).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_replay(bank_id text)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_replay.bank_id;
    batch CONSTANT integer := 500;
    ids uuid[];
    i integer := 1;
    result jsonb;
BEGIN
    BEGIN
        ids := ARRAY(SELECT f.id FROM facts AS f WHERE f.bank_id = b ORDER BY f.event_date, f.fact_id, f.id);
        PERFORM _forget_units(b, ids);
        PERFORM _flush_bank(b, TRUE);
        WHILE i <= cardinality(ids) LOOP
            PERFORM _resolve_and_link_facts(x.bank_ids, x.ids, x.mentions, x.event_dates)
            FROM (
                SELECT
                    array_agg(f.bank_id ORDER BY t.n) AS bank_ids,
                    array_agg(f.id::text ORDER BY t.n) AS ids,
                    array_agg(f.mentions::text ORDER BY t.n) AS mentions,
                    array_agg(f.event_date::text ORDER BY t.n) AS event_dates
                FROM unnest(ids[i:i + batch - 1]) WITH ORDINALITY AS t (id, n)
                INNER JOIN facts AS f ON f.bank_id = b AND t.id = f.id
            ) AS x;
            PERFORM _flush_bank(b, TRUE);
            i := i + batch;
        END LOOP;
        result := jsonb_build_object(
            'mentions', (
                SELECT coalesce(jsonb_agg(
                    jsonb_build_array(m.unit_id, m.ordinal, m.entity_id, m.decision, m.score)
                    ORDER BY t.n, m.ordinal
                ), '[]')
                FROM unnest(ids) WITH ORDINALITY AS t (id, n)
                INNER JOIN mentions AS m ON m.bank_id = b AND t.id = m.unit_id
            ),
            'entities', (
                SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.id), '[]')
                FROM entities AS e
                WHERE
                    e.bank_id = b
                    AND EXISTS (
                        SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = e.id AND m.unit_id = ANY(ids)
                    )
            )
        );
        RAISE SQLSTATE 'ER900' USING MESSAGE = 'reresolve: the replay is rolled back';
    EXCEPTION
        WHEN SQLSTATE 'ER900' THEN
            NULL;
    END;
    RETURN result;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_replay(text) IS
'Internal (reresolve, reresolve_replay): every fact of the bank decided again from nothing in event order '
'(event_date, fact_id, id), in a subtransaction rolled back; returns {mentions: [[unit_id, ordinal, entity_id, '
'decision, score], ...] in the replay''s order, entities: [the rows of the entities they went to]}.';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_replay_decided(bank_id text, replay jsonb)
RETURNS jsonb
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ reresolve.replay_decided_sql $$;

COMMENT ON FUNCTION {{ internal }}._reresolve_replay_decided(text, jsonb) IS
'Internal (reresolve, reresolve_replay): a replay''s clusters placed on the bank''s entities (most mentions in '
'common first, each entity once), as each fact''s decisions, and the entities to make for the clusters placed on '
'none: {units: {unit_id: {decided: [...], left_out: []}}, create: [rows]}.';

-- Whether another entity of the bank than except_id holds this name for
-- this type and homonym mark: the unique key of entities (folded name, type,
-- homonym), which an entity a replay makes or names must not collide with.
CREATE OR REPLACE FUNCTION {{ internal }}._name_held(
    bank_id text, name text, entity_type text, homonym uuid, except_id uuid
)
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT EXISTS (
        SELECT 1 FROM entities AS o
        WHERE
            o.bank_id = _name_held.bank_id AND o.id <> _name_held.except_id
            AND folded(o.canonical_name) = folded(_name_held.name)
            AND o.entity_type IS NOT DISTINCT FROM _name_held.entity_type
            AND o.homonym IS NOT DISTINCT FROM _name_held.homonym
    )
$$;

COMMENT ON FUNCTION {{ internal }}._name_held(text, text, text, uuid, uuid) IS
'Internal (reresolve, reresolve_replay): whether an entity other than except_id holds this folded name for this '
'type and homonym mark (the unique key of entities).';

-- The entities a replay makes (a cluster placed on none of the bank's),
-- from their rows: the replay's id and name, no mention yet (the moves that
-- follow count them). A homonym where the bank holds its name and type
-- already (the replay held two people apart that the bank has as one).
-- Returns the rows made, as the apply makes them again.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_create(bank_id text, entities jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_create.bank_id;
    rows_made jsonb;
BEGIN
    WITH made AS (
        INSERT INTO entities AS e (bank_id, id, canonical_name, entity_kind, entity_type, first_seen, last_seen, homonym)
        SELECT
            b, r.id, r.canonical_name, r.entity_kind, r.entity_type, r.first_seen, r.last_seen,
            CASE WHEN r.homonym IS NOT NULL OR _name_held(b, r.canonical_name, r.entity_type, NULL, r.id)
                THEN r.id END
        FROM jsonb_populate_recordset(NULL::entities, _reresolve_create.entities) AS r
        ORDER BY r.id
        RETURNING e.*
    )

    SELECT coalesce(jsonb_agg(to_jsonb(made) ORDER BY made.id), '[]') INTO rows_made FROM made;
    RETURN rows_made;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_create(text, jsonb) IS
'Internal (reresolve, reresolve_replay): make the entities of a replay''s clusters placed on none of the bank''s '
'(their rows: id, name, kind, type, dates; a homonym where the bank holds the name and type); returns the rows made.';

-- The entities a replay's clusters are placed on take the replay's name
-- (rows: id, canonical_name; none curated: the caller leaves out what an
-- operator named, nor one with an alias, which a merge or an operator gave
-- it), after the replay's moves (an entity of that name they left with
-- nothing is gone by then), one at a time in id order, each where no other
-- entity of the same type holds the name (the entity keeps its own otherwise:
-- two that would trade names keep theirs). Returns what changed:
-- [{entity_id, from, to}].
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_rename(bank_id text, entities jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_rename.bank_id;
    r record;
    renamed jsonb := '[]';
BEGIN
    FOR r IN
        SELECT e.id, e.canonical_name AS was, x.canonical_name AS name, e.entity_type, e.homonym
        FROM jsonb_to_recordset(_reresolve_rename.entities) AS x (id uuid, canonical_name text)
        INNER JOIN entities AS e ON e.bank_id = b AND x.id = e.id
        -- (an entity with an alias was named by a merge or an operator too)
        WHERE NOT EXISTS (SELECT 1 FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = e.id)
        ORDER BY e.id
    LOOP
        -- The name free? (looked at row by row: an earlier one may have taken it)
        CONTINUE WHEN _name_held(b, r.name, r.entity_type, r.homonym, r.id);
        UPDATE entities AS e SET canonical_name = r.name WHERE e.bank_id = b AND e.id = r.id;
        renamed := renamed || jsonb_build_object('entity_id', r.id, 'from', r.was, 'to', r.name);
    END LOOP;
    RETURN renamed;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_rename(text, jsonb) IS
'Internal (reresolve, reresolve_replay): give the entities a replay''s clusters are placed on the replay''s name '
'(rows: id, canonical_name), each where no other entity of its type holds it; returns [{entity_id, from, to}].';

-- Whether a plan replays the bank (reresolve_replay): a plan of the whole
-- bank only (a replay decides every fact; a plan scoped to some entities,
-- a date or the queue decides its own facts again, as they are). Not on a
-- distributed installation, whose writes of a bank run on its shard.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_replay_on(bank_id text, whole_bank boolean)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    setting text := _effective_settings(_reresolve_replay_on.bank_id) ->> 'reresolve_replay';
BEGIN
    IF {{ distributed }} OR NOT _reresolve_replay_on.whole_bank THEN
        RETURN FALSE;
    END IF;
    RETURN coalesce(setting::boolean, FALSE);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_replay_on(text, boolean) IS
'Internal (reresolve): whether a plan replays the bank in event order: the bank setting reresolve_replay, for a '
'plan of the whole bank (whole_bank), not on a distributed installation.';

-- Of the entities a replay made (_reresolve_create's rows), those nothing
-- moved to are removed again, as any orphan (_remove_orphans); returns the
-- rows of the others.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_unmade(bank_id text, created jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    gone jsonb := _remove_orphans(
        _reresolve_unmade.bank_id,
        ARRAY(SELECT r.id FROM jsonb_populate_recordset(NULL::entities, _reresolve_unmade.created) AS r),
        '[]'
    );
BEGIN
    RETURN (
        SELECT coalesce(jsonb_agg(x.r ORDER BY x.r ->> 'id'), '[]')
        FROM jsonb_array_elements(_reresolve_unmade.created) AS x (r)
        WHERE NOT gone ? (x.r ->> 'id')
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_unmade(text, jsonb) IS
'Internal (reresolve, reresolve_replay): remove the entities a replay made that no move went to; returns the rows '
'of the others.';

-- A plan's moves as each mention's one move: from where it was before its
-- first to where its last took it, in the order of the first; a mention
-- back where it began is left out (_reresolve_plan says why).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_net(moves jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    WITH steps AS (
        SELECT t.mv, t.i, t.mv ->> 'unit_id' AS unit_id, t.mv ->> 'ordinal' AS ordinal
        FROM jsonb_array_elements(_reresolve_net.moves) WITH ORDINALITY AS t (mv, i)
    ),

    ends AS (
        SELECT s.unit_id, s.ordinal, min(s.i) AS first_i, max(s.i) AS last_i
        FROM steps AS s
        GROUP BY s.unit_id, s.ordinal
    )

    SELECT coalesce(jsonb_agg(
        f.mv || jsonb_build_object(
            'to', l.mv -> 'to', 'new_decision', l.mv -> 'new_decision', 'new_score', l.mv -> 'new_score',
            'why', l.mv -> 'why'
        ) ORDER BY e.first_i
    ), '[]')
    FROM ends AS e
    INNER JOIN steps AS f ON e.first_i = f.i
    INNER JOIN steps AS l ON e.last_i = l.i
    WHERE f.mv -> 'from' ->> 'entity_id' <> l.mv -> 'to' ->> 'entity_id'
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_net(jsonb) IS
'Internal (reresolve): a plan''s steps (every move in order) as one move per mention, from where it was to where '
'it ends, in the order of its first; those that end where they began left out.';

CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_plan(
    bank_id text, entity_ids uuid[], since timestamptz, take_lock boolean, unit_ids uuid[]
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_plan.bank_id;
    ids uuid[] := _reresolve_plan.entity_ids;
    units uuid[];
    u uuid;
    decided jsonb;
    m record;
    now_is record;
    unit_moves jsonb;
    moves jsonb := '[]';
    kept jsonb := '[]';
    removed jsonb := '[]';
    n_decided bigint := 0;
    n_fixed bigint := 0;
    unrecorded uuid[];
    plan_id text := gen_random_uuid()::text;
    whole record;
    to_whole jsonb;
    moved_ids uuid[];
    reported jsonb;
    why_kept text;
    entities_on boolean;
    form_facts uuid[];
    apart_is record;
    apart text;
    replaying boolean;
    replayed jsonb;
    created jsonb := '[]';
    renamed jsonb := '[]';
    net jsonb;
    calls jsonb := '[]';
    pass integer;
    replay_pass boolean;
    how text;
BEGIN
    -- Every move, made in a subtransaction rolled back at the end: each fact
    -- is decided against the bank with the moves before it made.
    BEGIN
        IF _reresolve_plan.take_lock THEN
            -- (a dry run: the lock of an applied correction, undone with the rest)
            PERFORM _correction_lock(b);
        END IF;
        replaying := _reresolve_replay_on(
            b, ids IS NULL AND _reresolve_plan.since IS NULL AND _reresolve_plan.unit_ids IS NULL
        );
        units := ARRAY(
            SELECT f.id FROM facts AS f
            WHERE
                f.bank_id = b
                AND (_reresolve_plan.since IS NULL OR f.event_date >= _reresolve_plan.since)
                AND (ids IS NULL OR EXISTS (
                    SELECT 1 FROM mentions AS x WHERE x.bank_id = b AND x.unit_id = f.id AND x.entity_id = ANY(ids)
                ))
                AND (_reresolve_plan.unit_ids IS NULL OR f.id = ANY(_reresolve_plan.unit_ids))
            -- (after a replay, ties in event_date by fact_id: no order of arrival)
            ORDER BY f.event_date, CASE WHEN replaying THEN f.fact_id END, f.created_at, f.stored_order, f.id
        );
        IF replaying THEN
            -- The replay's decisions, placed on the bank's entities before
            -- anything moves, and the entities its clusters placed on none need.
            replayed := _reresolve_replay_decided(b, _reresolve_replay(b));
            created := _reresolve_create(b, replayed -> 'create');
        END IF;
        entities_on := _reresolve_entities_on(b, ids, units, _reresolve_plan.unit_ids IS NOT NULL);
        IF ids IS NULL AND _reresolve_plan.since IS NULL AND _reresolve_plan.unit_ids IS NULL THEN
            unrecorded := _reresolve_unrecorded(b);
        ELSE
            -- A scoped plan leaves out its own facts only: the cover of their entities.
            unrecorded := _reresolve_unrecorded(b, ARRAY(
                SELECT l.entity_id FROM unit_entities AS l WHERE l.bank_id = b AND l.unit_id = ANY(units)
                UNION
                SELECT p.entity_id FROM mentions AS p WHERE p.bank_id = b AND p.unit_id = ANY(units)
            ));
        END IF;
        -- With a replay, two passes: the replay's moves, then every fact
        -- decided again against the bank they made (what later facts taught).
        FOR pass IN CASE WHEN replaying THEN 1 ELSE 2 END..2 LOOP
            replay_pass := pass = 1;
            how := CASE WHEN replay_pass THEN 'replayed with the bank''s facts in event order'
                ELSE 'decided again against the bank as it stands' END;
            FOREACH u IN ARRAY units LOOP
                decided := NULL;
                unit_moves := '[]';
                FOR m IN
                    SELECT x.ordinal, x.mention, x.entity_id, x.decision, x.score, e.canonical_name, f.fact_id
                    FROM mentions AS x
                    INNER JOIN entities AS e ON x.bank_id = e.bank_id AND x.entity_id = e.id
                    INNER JOIN facts AS f ON x.bank_id = f.bank_id AND x.unit_id = f.id
                    WHERE x.bank_id = b AND x.unit_id = u
                    ORDER BY x.ordinal
                LOOP
                    -- Fixed points (_redecidable).
                    IF NOT _redecidable(m.decision) THEN
                        n_fixed := n_fixed + CASE WHEN replay_pass THEN 0 ELSE 1 END;
                        CONTINUE;
                    END IF;
                    -- Scoped to some entities: only their mentions.
                    CONTINUE WHEN ids IS NOT NULL AND m.entity_id <> ALL(ids);
                    IF replay_pass THEN
                        SELECT * INTO now_is
                        FROM _reresolve_decided(coalesce(replayed -> 'units' -> u::text, '{}'), m.ordinal);
                        CONTINUE WHEN NOT FOUND OR now_is.entity_id = m.entity_id;
                    ELSE
                        n_decided := n_decided + 1;
                        IF decided IS NULL THEN
                            decided := _reresolve_decide(b, u, unrecorded, plan_id);
                        END IF;
                        SELECT * INTO now_is FROM _reresolve_decided(decided, m.ordinal);
                        CONTINUE WHEN NOT FOUND;
                    END IF;
                    apart := '';
                    IF entities_on AND NOT replay_pass AND (now_is.entity_id = m.entity_id OR now_is.created OR now_is.untold)
                        AND folded(m.mention) <> folded(m.canonical_name) THEN
                        -- Where it would not move, a form other than its entity's
                        -- name is decided apart from the other facts of that form
                        -- on it (_reresolve_form_facts), under reresolve_entities;
                        -- it then moves only to an entity the bank holds, told
                        -- (not an abstention, nor a memory, nor the score's pick
                        -- among names it fits that nothing told apart, by_score:
                        -- recency alone moved held-out "Agnes"es, wrong merges).
                        form_facts := _reresolve_form_facts(b, m.entity_id, m.mention, u);
                        IF cardinality(form_facts) > 0 THEN
                            SELECT * INTO apart_is
                            FROM _reresolve_decided(_reresolve_decide(b, u, unrecorded, plan_id, form_facts), m.ordinal);
                            IF FOUND AND apart_is.entity_id <> m.entity_id AND NOT apart_is.created AND NOT apart_is.untold
                                AND NOT apart_is.by_score AND apart_is.decision IN ('resolved', 'identifier') THEN
                                now_is := apart_is;
                                apart := format(' without the %s other facts of %s on %s', cardinality(form_facts),
                                    quote_literal(m.mention), quote_literal(m.canonical_name));
                            END IF;
                        END IF;
                    END IF;
                    CONTINUE WHEN now_is.entity_id = m.entity_id;
                    -- Moves not made (each kept, with why).
                    IF now_is.created THEN
                        -- A new entity where the fact's own one was left out is
                        -- that entity again; elsewhere a split, the operator's call.
                        CONTINUE WHEN (decided -> 'left_out') ? m.entity_id::text;
                        why_kept := format('would now be a new entity (score %s): not moved; split_entity does that',
                            coalesce(round(now_is.score::numeric, 3)::text, 'none'));
                    ELSIF now_is.untold AND m.entity_id = now_is.leaning THEN
                        -- The bare entity (or an initial's) holds what nothing
                        -- told apart: an abstention, which does not overturn the
                        -- decision the mention had where the context still leans
                        -- to it.
                        why_kept := format(
                            'would now go to %s, as nothing tells apart the entities %s fits; the context leans to %s: '
                            || 'not moved',
                            quote_literal(now_is.canonical_name), quote_literal(m.mention), quote_literal(m.canonical_name)
                        );
                    ELSIF now_is.decision = 'memory' AND m.decision = 'resolved' AND NOT replay_pass THEN
                        -- A form remembered from other facts is the memory of
                        -- their arrival, not evidence about this mention: it
                        -- does not overturn what the mention's score and context
                        -- decided.
                        why_kept := format(
                            'would now go to %s by the memory of the form %s from other facts; its score placed it on %s: '
                            || 'not moved',
                            quote_literal(now_is.canonical_name), quote_literal(m.mention), quote_literal(m.canonical_name)
                        );
                    ELSIF _judged_distinct(b, m.entity_id, now_is.entity_id) THEN
                        why_kept := format('would now go to %s, which is judged distinct from %s: not moved',
                            quote_literal(now_is.canonical_name), quote_literal(m.canonical_name));
                    ELSE
                        why_kept := NULL;
                    END IF;
                    IF why_kept IS NOT NULL THEN
                        kept := kept || jsonb_build_object(
                            'unit_id', u, 'fact_id', m.fact_id, 'ordinal', m.ordinal, 'mention', m.mention,
                            'entity_id', m.entity_id, 'name', m.canonical_name, 'why', why_kept
                        );
                        CONTINUE;
                    END IF;
                    unit_moves := unit_moves || jsonb_build_object(
                        'ordinal', m.ordinal, 'to', now_is.entity_id, 'decision', now_is.decision, 'score', now_is.score
                    );
                    moves := moves || jsonb_build_object(
                        'unit_id', u, 'fact_id', m.fact_id, 'ordinal', m.ordinal, 'mention', m.mention,
                        'from', jsonb_build_object('entity_id', m.entity_id, 'name', m.canonical_name),
                        'to', jsonb_build_object('entity_id', now_is.entity_id, 'name', now_is.canonical_name),
                        'old_decision', m.decision, 'new_decision', now_is.decision,
                        'old_score', m.score, 'new_score', now_is.score,
                        'why', format('%s%s: %s %s (score %s%s), was %s %s (score %s)',
                            how, apart, now_is.decision, quote_literal(now_is.canonical_name),
                            coalesce(round(now_is.score::numeric, 3)::text, 'none'),
                            CASE WHEN now_is.by_score THEN format(
                                '; the best score, as nothing tells apart the entities %s fits', quote_literal(m.mention)
                            ) ELSE '' END,
                            m.decision, quote_literal(m.canonical_name),
                            coalesce(round(m.score::numeric, 3)::text, 'none'))
                    );
                END LOOP;
                IF jsonb_array_length(unit_moves) > 0 THEN
                    removed := removed || _reresolve_move(b, u, unit_moves);
                    calls := calls || jsonb_build_object('unit_id', u, 'moves', unit_moves);
                END IF;
            END LOOP;
            IF replay_pass THEN
                -- An entity made for a cluster none of whose mentions moved
                -- (each a fixed point, or kept) is not made; the others take
                -- the replay's names.
                created := _reresolve_unmade(b, created);
                renamed := _reresolve_rename(b, replayed -> 'rename');
                calls := calls || jsonb_build_object('rename', replayed -> 'rename');
            END IF;
        END LOOP;
        -- Then whole entities, where the bank asks for it (_reresolve_whole):
        -- of the plan's scope, not judged, not touched by a move of this plan.
        IF entities_on THEN
            moved_ids := ARRAY(
                SELECT (mv -> 'from' ->> 'entity_id')::uuid FROM jsonb_array_elements(moves) AS mv
                UNION
                SELECT (mv -> 'to' ->> 'entity_id')::uuid FROM jsonb_array_elements(moves) AS mv
            );
            FOR whole IN SELECT w.id, w.canonical_name FROM _reresolve_whole_scope(b, ids, units) AS w LOOP
                CONTINUE WHEN whole.id = ANY(moved_ids) OR NOT _reresolve_whole(b, whole.id);
                to_whole := _reresolve_entity_decide(b, whole.id, plan_id);
                CONTINUE WHEN to_whole IS NULL;
                moved_ids := moved_ids || whole.id || (to_whole ->> 'to')::uuid;
                FOR u IN
                    SELECT (x ->> 'unit_id')::uuid FROM jsonb_array_elements(to_whole -> 'mentions') WITH ORDINALITY AS t (x, i)
                    GROUP BY (x ->> 'unit_id')::uuid ORDER BY min(t.i)
                LOOP
                    -- What the move does, and what the plan reports of it, from one read.
                    SELECT
                        jsonb_agg(jsonb_build_object(
                            'ordinal', x -> 'ordinal', 'to', to_whole -> 'to', 'decision', x -> 'decision',
                            'score', x -> 'score') ORDER BY t.i),
                        jsonb_agg(jsonb_build_object(
                            'unit_id', u, 'fact_id', x -> 'fact_id', 'ordinal', x -> 'ordinal', 'mention', x -> 'mention',
                            'from', jsonb_build_object('entity_id', whole.id, 'name', whole.canonical_name),
                            'to', jsonb_build_object('entity_id', to_whole -> 'to', 'name', to_whole -> 'name'),
                            'old_decision', was.decision, 'new_decision', x -> 'decision',
                            'old_score', was.score, 'new_score', x -> 'score',
                            'why', format('decided again with %s left out, as every mention of it: %s %s (score %s), '
                                || 'was %s %s (score %s)',
                                quote_literal(whole.canonical_name), x ->> 'decision', quote_literal(to_whole ->> 'name'),
                                coalesce(round((x ->> 'score')::numeric, 3)::text, 'none'),
                                was.decision, quote_literal(whole.canonical_name),
                                coalesce(round(was.score::numeric, 3)::text, 'none'))
                        ) ORDER BY t.i)
                    INTO unit_moves, reported
                    FROM jsonb_array_elements(to_whole -> 'mentions') WITH ORDINALITY AS t (x, i)
                    INNER JOIN mentions AS was
                        ON was.bank_id = b AND was.unit_id = u AND was.ordinal = (x ->> 'ordinal')::integer
                    WHERE (x ->> 'unit_id')::uuid = u;
                    moves := moves || reported;
                    removed := removed || _reresolve_move(b, u, unit_moves);
                    calls := calls || jsonb_build_object('unit_id', u, 'moves', unit_moves);
                END LOOP;
            END LOOP;
        END IF;
        RAISE SQLSTATE 'ER900' USING MESSAGE = 'reresolve: the plan is rolled back';
    EXCEPTION
        WHEN SQLSTATE 'ER900' THEN
            NULL;
    END;
    -- After a replay a mention may have moved twice (replayed, then decided
    -- again), or back where it was: the moves reported are each mention's
    -- from its first move to its last, those that end where they began left
    -- out; the steps, every entity made and every move in order, are what
    -- the apply makes again.
    -- An entity the replay made and a later move left with nothing was
    -- never the bank's: it is neither made nor removed.
    net := _reresolve_net(moves);
    RETURN jsonb_build_object(
        'facts', cardinality(units),
        'mentions_decided', n_decided,
        'mentions_fixed', n_fixed,
        'mentions_moved', jsonb_array_length(net),
        'whole_entities', entities_on,
        'replayed', replaying,
        'entities_created', (
            SELECT coalesce(jsonb_agg(x.r ORDER BY x.r ->> 'id'), '[]') FROM jsonb_array_elements(created) AS x (r)
            WHERE NOT removed ? (x.r ->> 'id')
        ),
        'moves', net,
        'entities_renamed', renamed,
        'steps', jsonb_build_object(
            'moves', moves, 'calls', calls, 'created', created
        ),
        'kept', kept,
        'entities_removed', (
            SELECT coalesce(jsonb_agg(x.id ORDER BY x.i), '[]') FROM jsonb_array_elements_text(removed) WITH ORDINALITY AS x (id, i)
            WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(created) AS c (r) WHERE c.r ->> 'id' = x.id)
        )
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_plan(text, uuid[], timestamptz, boolean, uuid[]) IS
'Internal (reresolve): every move re-resolution would make, in order, found by making them in a subtransaction '
'rolled back; take_lock: lock the bank and flush its queue inside it (a dry run); unit_ids: only these facts '
'(NULL: all in scope).';

-- A re-resolution, decided and (unless a dry run) applied: the plan, then
-- the ledger's before-image and the moves again. The caller has checked the
-- arguments and begun the correction (_correction_begin).
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_run(
    bank_id text, entity_ids uuid[], since timestamptz, unit_ids uuid[], dry_run boolean, reason text, scope jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_run.bank_id;
    ids uuid[] := _reresolve_run.entity_ids;
    plan jsonb;
    previous text;
    ignored text;
BEGIN
    -- Generic plans, statistics or not (the comment before reresolve says
    -- why); the caller's plan_cache_mode back on the way out.
    previous := _generic_plans_switch(FALSE);
    plan := _reresolve_plan(b, ids, _reresolve_run.since, _reresolve_run.dry_run, _reresolve_run.unit_ids);
    plan := jsonb_build_object(
        'kind', 'reresolve',
        'bank_id', b,
        'scope', _reresolve_run.scope,
        'order', CASE
            WHEN (plan ->> 'replayed')::boolean
                THEN 'every fact replayed from nothing by event_date, then fact_id, then id; moved in the order below'
            ELSE 'facts by event_date (none last), then as stored (created_at, stored_order, id); mentions by position'
        END
    ) || plan;
    plan := plan || jsonb_build_object('summary', format('reresolve %s fact(s): %s of %s mention(s) moved',
        plan ->> 'facts', plan ->> 'mentions_moved', plan ->> 'mentions_decided'));
    IF _reresolve_run.dry_run OR jsonb_array_length(plan -> 'moves') + jsonb_array_length(plan -> 'entities_renamed') = 0 THEN
        -- Nothing to write (a dry run, or nothing moves): nothing ledgered.
        plan := plan - 'steps' || jsonb_build_object('dry_run', _reresolve_run.dry_run, 'operation_id', NULL);
    ELSE
        plan := _reresolve_apply(b, plan, _reresolve_run.reason);
    END IF;
    IF previous IS NOT NULL THEN
        ignored := set_config('plan_cache_mode', previous, TRUE);
    END IF;
    RETURN plan;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_run(text, uuid[], timestamptz, uuid[], boolean, text, jsonb) IS
'Internal (reresolve, reresolve_queued): plan the re-resolution of the facts in scope and, unless a dry run, '
'apply it as one ledgered operation (scope: what the plan reports as its scope).';

-- A plan applied: the ledger's before-image, then the plan's steps again
-- (every move it made, in order); the ledger keeps the plan without them.
CREATE OR REPLACE FUNCTION {{ internal }}._reresolve_apply(bank_id text, plan jsonb, reason text)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _reresolve_apply.bank_id;
    plan jsonb := _reresolve_apply.plan;
    touched uuid[];
    units uuid[];
    image jsonb;
    op_id bigint;
    run record;
BEGIN

    touched := ARRAY(
        SELECT x.id
        FROM jsonb_array_elements(plan -> 'steps' -> 'moves') AS mv,
            LATERAL (VALUES ((mv -> 'from' ->> 'entity_id')::uuid), ((mv -> 'to' ->> 'entity_id')::uuid)) AS x (id)
        UNION
        SELECT (r ->> 'id')::uuid
        FROM jsonb_array_elements(plan -> 'steps' -> 'calls') AS c (call),
            LATERAL jsonb_array_elements(c.call -> 'rename') AS r
        ORDER BY 1
    );
    units := ARRAY(
        SELECT DISTINCT (mv ->> 'unit_id')::uuid FROM jsonb_array_elements(plan -> 'steps' -> 'moves') AS mv
    );
    image := jsonb_build_object(
        'entities', (SELECT jsonb_agg(to_jsonb(e) ORDER BY e.id) FROM entities AS e
            WHERE e.bank_id = b AND e.id = ANY(touched)),
        'mentions', (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.unit_id, m.ordinal), '[]')
            FROM mentions AS m
            WHERE m.bank_id = b AND EXISTS (
                SELECT 1 FROM jsonb_array_elements(plan -> 'steps' -> 'moves') AS mv
                WHERE m.unit_id = (mv ->> 'unit_id')::uuid AND m.ordinal = (mv ->> 'ordinal')::integer
            )),
        'links', (SELECT coalesce(jsonb_agg(to_jsonb(ue) ORDER BY ue.unit_id, ue.entity_id), '[]')
            FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.unit_id = ANY(units)),
        'pairs', _pairs_image(b, touched),
        'orphans', _orphans(b, touched)
    );
    op_id := _record_operation(b, 'reresolve', _reresolve_apply.reason, touched, plan - 'steps', image);
    -- The entities the plan made (a replay's clusters placed on none), as it
    -- made them (one its later moves left with nothing goes again).
    PERFORM _reresolve_create(b, coalesce(plan -> 'steps' -> 'created', '[]'));

    -- The plan's moves again, call by call as it made them: the same bank
    -- (we hold its lock), the same moves, the same result. (Calls, not the
    -- moves: a mention a replay moved may move again in the next pass, and
    -- each call removes the entities its own moves leave with nothing. A
    -- replay's names are given between its moves and the next pass's.)
    FOR run IN
        SELECT (c.call ->> 'unit_id')::uuid AS unit_id, c.call -> 'moves' AS moves, c.call -> 'rename' AS rename
        FROM jsonb_array_elements(plan -> 'steps' -> 'calls') WITH ORDINALITY AS c (call, i)
        ORDER BY c.i
    LOOP
        IF run.rename IS NOT NULL THEN
            PERFORM _reresolve_rename(b, run.rename);
        ELSE
            PERFORM _reresolve_move(b, run.unit_id, run.moves);
        END IF;
    END LOOP;
    -- A mention whose steps took it back where it was did not move: its
    -- decision stays as it was recorded.
    UPDATE mentions AS m
    SET decision = r.decision, score = r.score, decided_at = r.decided_at
    FROM jsonb_populate_recordset(NULL::mentions, image -> 'mentions') AS r
    WHERE m.bank_id = b AND m.unit_id = r.unit_id AND m.ordinal = r.ordinal AND m.entity_id = r.entity_id;
    RETURN plan - 'steps' || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._reresolve_apply(text, jsonb, text) IS
'Internal (reresolve): apply a plan (_reresolve_plan) as one ledgered operation: its before-image, then its moves '
'in order. The caller holds the bank''s correction lock and has begun the correction.';

-- Generic plans for re-resolution: a plan runs its statements once or more per
-- fact, for a bank (b, a parameter) that may be new since the last ANALYZE.
-- A custom plan then estimates the bank at a row or so, and its joins read
-- the bank's rows by its prefix in a loop: with the statistics knowing only
-- another bank, the recurring family's 307 facts took 64-70 s to re-resolve
-- with whole entities, 4.3 s without; with generic plans (the bank's rows
-- estimated from the number of banks), 1.7 and 0.65 s, the same moves. On
-- the benchmark's analysed bank of 10,000 facts, 46-49 s against 54-55 s.
-- So reresolve and reresolve_queued switch to generic plans (as the
-- resolver does, entity_resolver.generic_plans) without waiting for the
-- statistics to be ready: within one call no table grows from empty.
CREATE OR REPLACE FUNCTION {{ schema }}.reresolve(
    bank_id text,
    entity_ids uuid[] DEFAULT NULL,
    since timestamptz DEFAULT NULL,
    dry_run boolean DEFAULT TRUE,
    reason text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(reresolve.bank_id);
    given uuid;
    ids uuid[];
BEGIN
    IF reresolve.entity_ids IS NOT NULL THEN
        PERFORM _check_id_array(reresolve.entity_ids, 'entity_ids', 'entity');
    END IF;
    PERFORM _correction_begin(b, reresolve.dry_run);
    PERFORM _require_bank(b);
    IF reresolve.entity_ids IS NOT NULL THEN
        -- In the order given (the first bad one is named); an id merged away
        -- stands for the entity it became.
        ids := '{}';
        FOREACH given IN ARRAY reresolve.entity_ids LOOP
            ids := ids || (_judged_entity(b, given, 'entity_ids') ->> 'id')::uuid;
        END LOOP;
    END IF;

    RETURN _reresolve_run(
        b, ids, reresolve.since, NULL, reresolve.dry_run, reresolve.reason,
        jsonb_build_object('entity_ids', to_jsonb(ids), 'since', reresolve.since)
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.reresolve(text, uuid[], timestamptz, boolean, text) IS
'Operator correction: decide the bank''s stored facts again against the bank as it now stands (all of them, those '
'mentioning entity_ids, or those dated since), in order (event_date, then as stored), and move the mentions whose '
'entity changed. Operators'' placements, aliases, literals and labels are not decided again; no move joins two '
'entities judged distinct, nor takes a name to its bare entity only because nothing tells apart the entities it '
'fits while the context leans to its own; no entity is renamed but by a replay. With the bank setting '
'reresolve_replay (off by default), a plan of the whole bank first replays it: every fact decided again from '
'nothing in event order, its '
'clusters placed on the bank''s entities, which take its names unless curated or aliased (entities_renamed), and '
'moved there (a cluster none is left for to an entity made for it, listed in entities_created); then every fact is '
'decided again as above. With the bank setting '
'reresolve_entities (by default, "auto", where the plan has at most _reresolve_whole_auto_max() such entities; the '
'plan''s whole_entities says), an entity the resolver made of one name is then decided again whole: where all its '
'mentions go to one other entity, they move there; and a form other than its entity''s name is decided apart from '
'the other facts of that form on that entity. dry_run (the default) returns the moves without writing; applied, one '
'transaction, ledgered (undo_operation).';

-- auto_reresolve: a bank with the setting on queues each unit it writes
-- (plpython/record.py); reresolve_queued, run on a schedule as flush_stats
-- is, takes the oldest queued units and decides their neighbourhood again.
-- Not at the writer's commit: re-resolution locks the bank exclusive, and a
-- writer holding the lock shared cannot wait for that while other writers
-- hold it too. The neighbourhood of a unit is the facts that share an entity
-- with it: where its evidence bears on an earlier decision ("Alex Kim" next
-- to React) the earlier fact names one of its entities (a bare "Alex" next
-- to React). Per entity, its most recent facts only (NEIGHBOURS below): a
-- hub next to half the bank would otherwise make every fact's neighbourhood
-- the bank.
CREATE OR REPLACE FUNCTION {{ schema }}.reresolve_queued(
    bank_id text,
    max_facts integer DEFAULT 100,
    dry_run boolean DEFAULT TRUE,
    reason text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    neighbours CONSTANT integer := 50;
    b text := check_bank_id(reresolve_queued.bank_id);
    n integer := _check_range(reresolve_queued.max_facts, 'max_facts', 1, 10000);
    taken uuid[];
    units uuid[];
    plan jsonb;
BEGIN
    PERFORM _correction_begin(b, reresolve_queued.dry_run);
    PERFORM _require_bank(b);
    taken := ARRAY(
        SELECT q.unit_id FROM reresolve_queue AS q
        WHERE q.bank_id = b
        ORDER BY q.queued_at, q.unit_id
        LIMIT n
    );
    units := ARRAY(
        SELECT t.unit_id FROM unnest(taken) AS t (unit_id)
        UNION
        SELECT r.unit_id
        FROM unit_entities AS ue
        CROSS JOIN LATERAL (
            SELECT x.unit_id FROM unit_entities AS x
            WHERE x.bank_id = b AND x.entity_id = ue.entity_id
            ORDER BY x.event_date DESC NULLS LAST, x.unit_id
            LIMIT neighbours
        ) AS r
        WHERE ue.bank_id = b AND ue.unit_id = ANY(taken)
    );
    IF NOT reresolve_queued.dry_run THEN
        DELETE FROM reresolve_queue AS q WHERE q.bank_id = b AND q.unit_id = ANY(taken);
    END IF;
    plan := _reresolve_run(
        b, NULL, NULL, units, reresolve_queued.dry_run,
        coalesce(reresolve_queued.reason, format('reresolve_queued: %s queued unit(s)', cardinality(taken))),
        jsonb_build_object('queued_units', to_jsonb(taken), 'neighbourhood_units', cardinality(units))
    );
    RETURN plan || jsonb_build_object(
        'queued_taken', cardinality(taken),
        'queued_left', (SELECT count(*) FROM reresolve_queue AS q WHERE q.bank_id = b)
            - CASE WHEN reresolve_queued.dry_run THEN cardinality(taken) ELSE 0 END
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.reresolve_queued(text, integer, boolean, text) IS
'Operator correction (auto_reresolve): take the bank''s oldest max_facts queued units and decide again the facts '
'that share an entity with them (per entity its 50 most recent), as reresolve does; applied, one ledgered '
'operation (undo_operation) that also empties those units from the queue; dry_run (the default) writes nothing. '
'Run it on a schedule (pg_cron) with dry_run => false.';
