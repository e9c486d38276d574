-- Search that stays fast as the history grows. GET /jobs by type, group, worker, args content
-- (argsContains) or text (q) used to walk the job table newest first, filtering row by row: fine
-- while matches are recent or common, seconds once a match is rare and the history holds millions
-- of jobs. These indexes
-- cover the final jobs only (finished, failed, dropped, cancelled): a job enters them once, when it
-- ends, and the lease and heartbeats of open jobs never touch them (a partial index whose
-- predicate is false costs an update nothing). The search looks at the newest jobs first without
-- them, and asks them only for what it did not find there (src/repositories/job/search.ts).

-- type, group and worker, newest first: a rare one among millions of final jobs is found at once.
-- (The plain (type, id) index went in 0002 because every state change paid for it; these are paid
-- once per job.)
CREATE INDEX job_final_type_idx ON job (type, id) WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');
CREATE INDEX job_final_group_idx ON job (group_, id) WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');
CREATE INDEX job_final_worker_idx ON job (worker, id) WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');
-- "the failed jobs of this type": the rare final states by type (finished ones are common enough
-- to be found walking the type's index); a combination with no match at all answers at once too.
CREATE INDEX job_attention_type_idx ON job (type, state, id) WHERE state IN ('failed', 'dropped', 'cancelled');

-- argsContains: jsonb_path_ops, the smaller and faster of the two GIN classes, for @> only.
CREATE INDEX job_final_args_idx ON job USING gin (args jsonb_path_ops)
  WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');

-- What q searches, as one text (a newline between the parts; the search still checks each part).
CREATE FUNCTION jobclock_search_text(args jsonb, subject text, error jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(args::text, '') || E'\n' || coalesce(subject, '') || E'\n' || coalesce(error::text, '') $$;

-- q: trigrams of what q searches (args, subject and error as text), when pg_trgm can be had. It is
-- a trusted extension (the database owner may create it); where it cannot be created the search
-- still answers, without this index.
DO $$
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%): text search (q) runs without its index', SQLERRM;
    RETURN;
  END;
  CREATE INDEX job_final_text_idx ON job USING gin (jobclock_search_text(args, subject, error) gin_trgm_ops)
    WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');
END
$$;
