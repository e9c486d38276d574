-- A job's history (GET /jobs/{id}/events). The usual path — created, leased, finished — is read from
-- the job's own columns and costs the hot path nothing. What those columns cannot hold is stored
-- here: the end of every attempt that did not finish (a failure report, a lease that expired, a
-- timebox, a lease given back), drops, and every action taken through the API with the role that
-- took it. An attempt-ending event carries the attempt's worker and start, so earlier leases can be
-- shown after a later one overwrote the columns.
--
-- No foreign key: a key would check every insert and, with ON DELETE CASCADE, every retention
-- delete; retention deletes a job's events in the statement that deletes the job.
CREATE TABLE job_event (
  id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id   bigint      NOT NULL,
  at       timestamptz NOT NULL,
  -- requeued | failed | lease-expired | timed-out | given-back | dropped | cancelled | retried | patched
  kind     text        NOT NULL,
  attempt  integer,
  worker   text,
  -- the role that took a manual action (admin, producer, …), or policy:replace; null otherwise
  actor    text,
  detail   jsonb
);
CREATE INDEX job_event_job_idx ON job_event (job_id, id);

-- W3C Trace Context given by the producer (POST /jobs traceparent), handed to the worker with the
-- lease, so a trace continues from the producer into the worker.
ALTER TABLE job ADD COLUMN traceparent text CHECK (length(traceparent) <= 55);
