-- What the PeriodicScheduler does with the runs of a task it missed (jobclock not running, the
-- database away): coalesce them into one run (the default, as before), skip them, or catch up on
-- each of them, at most catch_up_limit.
ALTER TABLE periodic_task
  ADD COLUMN misfire_policy text NOT NULL DEFAULT 'coalesce' CHECK (misfire_policy IN ('coalesce', 'skip', 'catch-up')),
  ADD COLUMN catch_up_limit integer NOT NULL DEFAULT 10 CHECK (catch_up_limit BETWEEN 1 AND 1000);
