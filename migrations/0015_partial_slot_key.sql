-- One job per (periodic task, scheduled slot) — held by a unique index over the jobs of periodic
-- tasks only, instead of the table constraint of migration 0001 over every row.
--
-- A job that belongs to no task has NULL in both columns and can never conflict, yet the constraint's
-- index took an entry for every row version: at every enqueue, every lease and every report (each
-- writes a new row version of the job, and the index cannot be skipped while state changes), and
-- behind 10 million final jobs an index of 10 million NULLs that every vacuum of the table reads.
-- The partial index holds the jobs of tasks only; the same name, so that a slot conflict still
-- names job_periodic_slot_key. Statements that pass over taken slots say
-- `ON CONFLICT (periodic_task_id, scheduled_at) WHERE periodic_task_id IS NOT NULL`.
--
-- On a large table this reads it once to build the index, holding off writes meanwhile (seconds
-- for millions of jobs).
ALTER TABLE job DROP CONSTRAINT job_periodic_slot_key;
CREATE UNIQUE INDEX job_periodic_slot_key ON job (periodic_task_id, scheduled_at) WHERE periodic_task_id IS NOT NULL;
