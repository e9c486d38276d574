-- PostgreSQL evaluates every CHECK constraint of a table on every new row version, whichever
-- columns changed: the lease and the report of each job paid for nine checks of columns that a
-- change of state never writes (type, group, unique and debounce keys, traceparent, max attempts,
-- timebox, and the drop check's interval and tolerance). They become one row trigger that fires
-- only on an insert or on an update naming one of those columns, and only when a value is out of
-- bounds: the same rules as before, refused with the same error (check_violation, the constraint's
-- former name). The checks of the columns a change of state writes (state, attempts, lease token
-- and duration) stay CHECKs.
--
-- Locks: job briefly (ACCESS EXCLUSIVE to drop the constraints); no row is read or written.

CREATE FUNCTION jobclock_job_refused() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c text := CASE
    WHEN length(NEW.type) NOT BETWEEN 1 AND 200 THEN 'job_type_check'
    WHEN length(NEW.group_) NOT BETWEEN 1 AND 200 THEN 'job_group__check'
    WHEN length(NEW.unique_key) NOT BETWEEN 1 AND 200 THEN 'job_unique_key_check'
    WHEN length(NEW.debounce_key) NOT BETWEEN 1 AND 200 THEN 'job_debounce_key_check'
    WHEN length(NEW.traceparent) > 55 THEN 'job_traceparent_check'
    WHEN NEW.max_attempts < 1 THEN 'job_max_attempts_check'
    WHEN NEW.timebox <= 0 THEN 'job_timebox_check'
    WHEN NEW.run_interval <= 0 THEN 'job_run_interval_check'
    WHEN NEW.run_tolerance < 0 THEN 'job_run_tolerance_check'
  END;
BEGIN
  RAISE EXCEPTION 'new row for relation "job" violates check constraint "%"', c
    USING ERRCODE = 'check_violation', CONSTRAINT = c, TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA;
END;
$$;
REVOKE ALL ON FUNCTION jobclock_job_refused() FROM PUBLIC;

-- NULL passes, as it passes a CHECK
CREATE TRIGGER job_fixed_columns_checked
  AFTER INSERT OR UPDATE OF type, group_, unique_key, debounce_key, traceparent, max_attempts, timebox, run_interval, run_tolerance
  ON job FOR EACH ROW
  WHEN (length(NEW.type) NOT BETWEEN 1 AND 200 OR length(NEW.group_) NOT BETWEEN 1 AND 200
        OR length(NEW.unique_key) NOT BETWEEN 1 AND 200 OR length(NEW.debounce_key) NOT BETWEEN 1 AND 200
        OR length(NEW.traceparent) > 55 OR NEW.max_attempts < 1 OR NEW.timebox <= 0 OR NEW.run_interval <= 0
        OR NEW.run_tolerance < 0)
  EXECUTE FUNCTION jobclock_job_refused();

ALTER TABLE job
  DROP CONSTRAINT job_type_check,
  DROP CONSTRAINT job_group__check,
  DROP CONSTRAINT job_unique_key_check,
  DROP CONSTRAINT job_debounce_key_check,
  DROP CONSTRAINT job_traceparent_check,
  DROP CONSTRAINT job_max_attempts_check,
  DROP CONSTRAINT job_timebox_check,
  DROP CONSTRAINT job_run_interval_check,
  DROP CONSTRAINT job_run_tolerance_check;
