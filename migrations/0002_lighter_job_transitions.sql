-- Every change of a job's state (queued → running → finished) is an UPDATE that cannot be HOT,
-- because state is part of the partial indexes' predicates: each one writes a new entry into every
-- index whose predicate holds. job_state_idx and job_type_idx hold every row, so every lease and
-- every report paid for two more index entries, only to serve the search of GET /jobs. Measured on
-- the raw SQL claim-and-finish loop (bench row a.raw100), they were about 40% of PostgreSQL's CPU
-- per job.
--
-- Search without them: a state filter on queued or running jobs uses the lease and lease-expiry
-- indexes; a filter on finished jobs (most of the table) walks the primary key newest first and
-- stops at the page size; the states that need attention get the index below (newest first, a type
-- filter checked on its rows), which the hot path (queued → running → finished) never touches.
DROP INDEX job_state_idx;
DROP INDEX job_type_idx;
CREATE INDEX job_attention_idx ON job (state, id) WHERE state IN ('failed', 'dropped', 'cancelled');

-- The concurrency policies look for open jobs of one periodic task. The index held every open
-- job, so each insert and each lease of a job without a task wrote an entry nobody looks up.
DROP INDEX job_open_by_task_idx;
CREATE INDEX job_open_by_task_idx ON job (periodic_task_id) WHERE periodic_task_id IS NOT NULL AND state IN ('queued', 'running');
