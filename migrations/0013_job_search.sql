-- Content search (q, argsContains) moves off the job table into job_search.
--
-- The two GIN indexes of migration 0009 held an entry for every final job, on the job table. The
-- queue churns, so that table is vacuumed every 20,000 changed rows (migration 0010), and every
-- vacuum read both GINs whole: a GIN clean-up reads all of an index even when nothing in it died.
-- Behind 10 million final jobs a vacuum of `job` then ran most of the time, and PostgreSQL spent
-- some 20 µs more per job in autovacuum alone: the worker loop lost a fifth of its throughput.
--
-- job_search holds what a content search reads of a final job: written when the job ends (again if
-- it ends again after a retry), deleted with it. Nothing in it changes afterwards, so autovacuum
-- has nothing to do there but after retention's deletions. A search finds ids here and checks each
-- match on the job row itself, so a row whose job was since retried finds nothing it should not.
CREATE TABLE job_search (
  id    bigint PRIMARY KEY,
  args  jsonb,
  text  text NOT NULL
) WITH (
  -- rows are only ever added (and deleted by retention): no vacuum for inserts, which would read
  -- both GINs whole for nothing; deletions still bring one after a fifth of the table
  autovacuum_vacuum_insert_threshold = -1
);

INSERT INTO job_search (id, args, text)
  SELECT id, args, jobclock_search_text(args, subject, error) FROM job
   WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');

DROP INDEX IF EXISTS job_final_args_idx;
DROP INDEX IF EXISTS job_final_text_idx;

-- argsContains: jsonb_path_ops, the smaller and faster of the two GIN classes, for @> only. Its
-- keys are hashes of whole paths and values, nearly one of its own for every job. New entries wait
-- in GIN's pending list until it is merged into the index, by autovacuum or by the backend whose
-- insert finds the list over its limit. With the default limit (4 MB) the worker loop's jobs cost
-- PostgreSQL about 20 µs more each than with the index on `job` (bench row j.base, CPU by process);
-- with 512 kB, no more: a backend's merge of many distinct keys is held to work_mem, and a smaller
-- list is merged in one go. (The trigram index has few distinct keys: its default limit costs nothing.)
CREATE INDEX job_search_args_idx ON job_search USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512);
-- q: trigrams of args, subject and error as one text, where pg_trgm exists (migration 0009).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX job_search_text_idx ON job_search USING gin (text gin_trgm_ops);
  ELSE
    RAISE NOTICE 'pg_trgm is not installed: text search (q) runs without its index';
  END IF;
END
$$;

-- Whatever makes a job final (a report, the reaper, a cancel, a bulk action, a drop at lease, SQL
-- by hand) writes its search rows, once per statement: a lease or heartbeat, which ends no job,
-- inserts nothing. A final job whose args, subject or error change is written again; one whose
-- search row is already right is left alone.
CREATE FUNCTION jobclock_search_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_search (id, args, text)
    SELECT n.id, n.args, jobclock_search_text(n.args, n.subject, n.error)
      FROM jobclock_new n
     WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled')
  ON CONFLICT (id) DO UPDATE SET args = EXCLUDED.args, text = EXCLUDED.text
    WHERE job_search.args IS DISTINCT FROM EXCLUDED.args OR job_search.text IS DISTINCT FROM EXCLUDED.text;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_search_on_update AFTER UPDATE ON job
  REFERENCING NEW TABLE AS jobclock_new
  FOR EACH STATEMENT EXECUTE FUNCTION jobclock_search_on_update();

-- A job inserted final (SQL by hand, an import): one test of its state for every other insert.
CREATE FUNCTION jobclock_search_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_search (id, args, text) VALUES (NEW.id, NEW.args, jobclock_search_text(NEW.args, NEW.subject, NEW.error))
  ON CONFLICT (id) DO UPDATE SET args = EXCLUDED.args, text = EXCLUDED.text;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_search_on_insert AFTER INSERT ON job
  FOR EACH ROW WHEN (NEW.state IN ('finished', 'failed', 'dropped', 'cancelled'))
  EXECUTE FUNCTION jobclock_search_on_insert();

-- Deleted jobs (retention, SQL by hand) take their search rows with them, once per statement.
CREATE FUNCTION jobclock_search_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_search s USING jobclock_gone g WHERE s.id = g.id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_search_on_delete AFTER DELETE ON job
  REFERENCING OLD TABLE AS jobclock_gone
  FOR EACH STATEMENT EXECUTE FUNCTION jobclock_search_on_delete();
