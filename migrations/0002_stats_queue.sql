-- entity_resolver 0002: the durable statistics queue.
-- Resolution and linking append increments here in the caller's transaction
-- (a rollback queues nothing, a commit loses nothing); flush_stats applies
-- them to entities and entity_cooccurrences in sorted key order.

CREATE TABLE {{ schema }}.stats_queue (
    bank_id text NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    entity_id uuid NOT NULL,
    entity_id_2 uuid,
    increment bigint NOT NULL DEFAULT 1,
    event_date timestamptz,
    queued_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id),
    CONSTRAINT stats_queue_pair_ordered CHECK (
        entity_id_2 IS NULL OR entity_id < entity_id_2
    ),
    CONSTRAINT stats_queue_increment CHECK (increment > 0)
);

COMMENT ON TABLE {{ schema }}.stats_queue IS
'Durable queue of statistics increments, applied and deleted by flush_stats.';
COMMENT ON COLUMN {{ schema }}.stats_queue.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.stats_queue.id IS 'Queue order.';
COMMENT ON COLUMN {{ schema }}.stats_queue.entity_id IS
'The mentioned entity, or the smaller id of a co-occurring pair.';
COMMENT ON COLUMN {{ schema }}.stats_queue.entity_id_2 IS
'NULL for a mention increment; the larger id of the pair for a co-occurrence increment.';
COMMENT ON COLUMN {{ schema }}.stats_queue.increment IS
'How many mentions (or facts sharing the pair) this row adds.';
COMMENT ON COLUMN {{ schema }}.stats_queue.event_date IS
'Latest event date among the increments (moves last_seen / last_cooccurred).';
COMMENT ON COLUMN {{ schema }}.stats_queue.queued_at IS 'When the row was queued.';
