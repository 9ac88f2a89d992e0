-- entity_resolver 0005: no pending list on the trigram index.
-- With fastupdate on, new names wait in the GIN pending list until a vacuum;
-- a probe must then scan that list too, and a session planning afresh after
-- many writes picks a sequential scan: at 10,000 entities the probe went from
-- about 45 ms to 1.3 s and four concurrent writers from 818 to 81 mentions/s
-- (docs/benchmarks.md). Inserting straight into the index costs each new
-- entity a little more; probes stay fast.

ALTER INDEX {{ schema }}.entities_name_trgm_idx SET (fastupdate = FALSE);
