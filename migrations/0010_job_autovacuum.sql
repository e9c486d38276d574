-- The job table is a queue in front of a history: a few thousand open rows that change all the
-- time, and millions of final ones that do not. PostgreSQL's defaults vacuum a table once a fifth
-- of it is dead, which behind a history of 10 million rows is 2 million dead queue rows: the lease's
-- partial indexes (queued jobs only) would fill with dead entries that every lease steps over.
-- So the job table is vacuumed after a fixed number of changed rows, whatever its size, and
-- without the cost-based pauses that would make one vacuum of a large table take minutes.
ALTER TABLE job SET (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 20000,
  -- inserted jobs: vacuum sets the visibility map, so the counts read the indexes only
  autovacuum_vacuum_insert_scale_factor = 0,
  autovacuum_vacuum_insert_threshold = 100000,
  autovacuum_analyze_scale_factor = 0,
  autovacuum_analyze_threshold = 50000,
  autovacuum_vacuum_cost_delay = 0
);

-- The permit rows of flow control change with every limited lease: the same, on a small scale.
ALTER TABLE flow_slot SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE flow_token SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
