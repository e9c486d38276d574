-- A running job deleted by hand (SQL by a DBA, a script that clears a type) gives its flow-control
-- slots back, as a job that stops running does: without this its slots stayed taken by a job that
-- no longer exists, and the limit of its type or group was lowered for good. Only rows that hold
-- slots fire it: retention, which deletes final jobs, pays one boolean test per row.
CREATE FUNCTION jobclock_release_deleted_slots() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- released_at stays empty: a deleted job has no end for the next holder to start after
  UPDATE flow_slot SET job_id = NULL, released_at = NULL WHERE job_id = OLD.id;
  PERFORM pg_notify('jobclock_jobs', '');
  RETURN OLD;
END;
$$;

CREATE TRIGGER job_release_slots_on_delete AFTER DELETE ON job
  FOR EACH ROW WHEN (OLD.holds_slot)
  EXECUTE FUNCTION jobclock_release_deleted_slots();
