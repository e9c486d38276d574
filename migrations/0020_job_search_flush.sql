-- A worker's report sometimes took 80-290 ms where it takes 4-15 ms: the finished jobs' search rows
-- go into job_search's newest partition, whose two GIN indexes (args, trigrams) take new entries
-- into a pending list, and the statement whose rows overflow that list merges all of it into the
-- index (the trigram list of 4 MB every few thousand jobs, 42-78 ms on an idle server, longer
-- under load). Autovacuum merges the lists only when it analyzes a partition, after a tenth of its
-- rows are new (0013 turned its vacuums for insertions off: they read both GINs whole): on a
-- partition of a million rows, once per 100,000 ending jobs.
--
-- jobclock_search_flush() merges the pending lists of the GINs of every partition of job_search
-- (rows go to the newest partitions mostly, but a job that waited long lands in an old one) with
-- gin_clean_pending_list(), which on an empty list only reads the index's first page. Each
-- instance calls it every second (SearchIndexFlusher), so a list holds a second's rows when it is
-- merged, away from the workers' requests. One instance at a time:
-- a call finding another one at work returns at once. It runs as its owner (SECURITY DEFINER),
-- since gin_clean_pending_list() asks for the index's owner, as VACUUM does. Returns the pending
-- pages merged. It holds a light lock on each index it merged until it returns: the upkeep's DROP
-- of an emptied partition (0018) waits for it, 100 ms at most, or comes back at the next sweep.
CREATE FUNCTION jobclock_search_flush() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  pages integer := 0;
  idx regclass;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('jobclock_search_flush')) THEN
    RETURN 0;
  END IF;
  FOR idx IN
    SELECT i.indexrelid::regclass
      FROM pg_inherits h
      JOIN pg_index i ON i.indrelid = h.inhrelid
      JOIN pg_class ic ON ic.oid = i.indexrelid
      JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'gin'
     WHERE h.inhparent = 'public.job_search'::regclass
     ORDER BY 1
  LOOP
    pages := pages + gin_clean_pending_list(idx);
  END LOOP;
  RETURN pages;
END;
$$;
