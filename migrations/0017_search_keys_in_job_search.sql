-- The type, group and worker of final jobs are searched in job_search, no longer on job.
--
-- Migration 0009 indexed them on the job table, over the final jobs only (job_final_type_idx,
-- job_final_group_idx, job_final_worker_idx). Those three B-trees hold every final job: behind 10
-- million of them, three quarters of the pages of the table's indexes. Since migration 0016 every
-- vacuum of job reads its indexes whole, and the queue keeps that table vacuumed every few seconds
-- while jobs move, so those pages cost the worker loop all the time, for the sake of a search. In
-- job_search, whose rows are written once when a job ends and never change, they cost no vacuum
-- but after retention's deletions (as the content indexes of migration 0013 do).
--
-- On a large history this writes job_search again from the final jobs (like 0013: about a minute
-- per few million final jobs), holding off writes to job meanwhile.
CREATE TABLE job_search_0017 (
  id      bigint PRIMARY KEY,
  type    text NOT NULL,
  group_  text NOT NULL,
  worker  text,
  args    jsonb,
  text    text NOT NULL
) WITH (
  -- as in 0013: rows are only ever added (and deleted by retention), so no vacuum for inserts
  autovacuum_vacuum_insert_threshold = -1
);

INSERT INTO job_search_0017 (id, type, group_, worker, args, text)
  SELECT id, type, group_, worker, args, jobclock_search_text(args, subject, error) FROM job
   WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');

DROP TABLE job_search;
ALTER TABLE job_search_0017 RENAME TO job_search;
ALTER INDEX job_search_0017_pkey RENAME TO job_search_pkey;

DROP INDEX job_final_type_idx;
DROP INDEX job_final_group_idx;
DROP INDEX job_final_worker_idx;

-- type, group and worker, newest first: a rare one among millions of final jobs is found at once
CREATE INDEX job_search_type_idx ON job_search (type, id);
CREATE INDEX job_search_group_idx ON job_search (group_, id);
CREATE INDEX job_search_worker_idx ON job_search (worker, id) WHERE worker IS NOT NULL;
-- the content indexes of 0013, made again on the new table
CREATE INDEX job_search_args_idx ON job_search USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512);
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX job_search_text_idx ON job_search USING gin (text gin_trgm_ops);
  ELSE
    RAISE NOTICE 'pg_trgm is not installed: text search (q) runs without its index';
  END IF;
END
$$;

-- The triggers of 0013 write the new columns too; a final job whose type, group or worker changes
-- (ended again by another worker after a retry) is written again.
CREATE OR REPLACE FUNCTION jobclock_search_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_search (id, type, group_, worker, args, text)
    SELECT n.id, n.type, n.group_, n.worker, n.args, jobclock_search_text(n.args, n.subject, n.error)
      FROM jobclock_new n
     WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled')
  ON CONFLICT (id) DO UPDATE
    SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text
    WHERE (job_search.type, job_search.group_, job_search.worker, job_search.args, job_search.text)
          IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.group_, EXCLUDED.worker, EXCLUDED.args, EXCLUDED.text);
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION jobclock_search_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_search (id, type, group_, worker, args, text)
    VALUES (NEW.id, NEW.type, NEW.group_, NEW.worker, NEW.args, jobclock_search_text(NEW.args, NEW.subject, NEW.error))
  ON CONFLICT (id) DO UPDATE
    SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text;
  RETURN NULL;
END;
$$;
