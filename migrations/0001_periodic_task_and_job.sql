-- jobclock schema, version 1: periodic tasks and the jobs they (and producers) submit.
-- Durations are stored as bigint milliseconds (columns suffixed _ms are not used so that the
-- docspell column names stay recognisable; every duration column below is in milliseconds).

CREATE TABLE periodic_task (
  id                  text        PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._:-]{1,200}$'),
  enabled             boolean     NOT NULL DEFAULT true,
  task                text        NOT NULL CHECK (length(task) BETWEEN 1 AND 200),
  group_              text        NOT NULL DEFAULT 'default' CHECK (length(group_) BETWEEN 1 AND 200),
  args                jsonb,
  subject             text,
  submitter           text,
  priority            integer     NOT NULL DEFAULT 0,
  owner               text        CHECK (length(owner) BETWEEN 1 AND 200),
  -- the schedule as written by the user (interval, cron or calendar event)
  timer               text        NOT NULL,
  timezone            text        NOT NULL DEFAULT 'UTC',
  first_run_at        timestamptz,
  -- NULL means "the default": computed from the schedule when needed
  tolerance           bigint      CHECK (tolerance >= 0),
  timebox             bigint      CHECK (timebox > 0),
  concurrency_policy  text        NOT NULL DEFAULT 'forbid'
                                  CHECK (concurrency_policy IN ('forbid', 'allow', 'replace')),
  -- mark: the scheduler instance that is submitting this task right now, and since when
  worker              text,
  marked              timestamptz,
  -- the next scheduled time; NULL when the schedule will never fire again
  nextrun             timestamptz,
  -- when a job of this task last began executing (set at lease time)
  last_run            timestamptz,
  -- opaque state saved by the last run, handed to the next job as taskState
  state               jsonb,
  created             timestamptz NOT NULL DEFAULT now(),
  updated             timestamptz NOT NULL DEFAULT now(),
  CHECK ((worker IS NULL) = (marked IS NULL))
);

-- The scheduler's "earliest due" query: enabled tasks ordered by nextrun.
CREATE INDEX periodic_task_due_idx ON periodic_task (nextrun) WHERE enabled AND nextrun IS NOT NULL;
-- Stale marks are cleared by age.
CREATE INDEX periodic_task_marked_idx ON periodic_task (marked) WHERE marked IS NOT NULL;
CREATE INDEX periodic_task_owner_idx ON periodic_task (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX periodic_task_task_idx ON periodic_task (task, id);

CREATE TABLE job (
  id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  type              text        NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
  group_            text        NOT NULL DEFAULT 'default' CHECK (length(group_) BETWEEN 1 AND 200),
  args              jsonb,
  subject           text,
  submitter         text,
  priority          integer     NOT NULL DEFAULT 0,
  -- queued:    waiting for run_at; leased by POST /jobs/next (-> running), cancelled by a user
  -- running:   leased by a worker; moved out by its reports, by the lease reaper, or by cancel
  -- finished, failed, dropped, cancelled: final; only POST /jobs/{id}/retry moves a job out again
  state             text        NOT NULL DEFAULT 'queued'
                                CHECK (state IN ('queued', 'running', 'finished', 'failed', 'dropped', 'cancelled')),
  run_at            timestamptz NOT NULL,
  attempts          integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts      integer     NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
  unique_key        text        CHECK (length(unique_key) BETWEEN 1 AND 200),
  -- survives the task's deletion: the job stays, the link is cleared
  periodic_task_id  text        REFERENCES periodic_task (id) ON DELETE SET NULL,
  -- the slot of the periodic task this job was submitted for
  scheduled_at      timestamptz,
  timebox           bigint      CHECK (timebox > 0),
  -- the drop check at lease time (policy allow): a job that would begin before
  -- task.last_run + run_interval - run_tolerance is dropped. NULL: no check.
  run_interval      bigint      CHECK (run_interval > 0),
  run_tolerance     bigint      CHECK (run_tolerance >= 0),
  worker            text,
  lease_token       uuid,
  lease_expires_at  timestamptz,
  -- the lease length the worker asked for; a heartbeat without `lease` extends by it again
  lease_duration    bigint      CHECK (lease_duration > 0),
  started_at        timestamptz,
  deadline          timestamptz,
  finished_at       timestamptz,
  progress          jsonb,
  result            jsonb,
  error             jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  -- the lease token is kept after a report so that a repeated report is recognised as harmless
  CHECK (state <> 'running' OR lease_token IS NOT NULL),
  CONSTRAINT job_periodic_slot_key UNIQUE (periodic_task_id, scheduled_at)
);

-- The lease query: queued jobs in priority order, then run_at, then creation (id).
CREATE INDEX job_lease_idx ON job (priority DESC, run_at, id) WHERE state = 'queued';
-- Long-polling workers sleep until the earliest queued job in the future becomes runnable.
CREATE INDEX job_queued_run_at_idx ON job (run_at) WHERE state = 'queued';
-- Leasing filtered by type.
CREATE INDEX job_lease_type_idx ON job (type, priority DESC, run_at, id) WHERE state = 'queued';
-- The lease reaper: running jobs by lease expiry and by deadline.
CREATE INDEX job_lease_expiry_idx ON job (lease_expires_at) WHERE state = 'running';
CREATE INDEX job_deadline_idx ON job (deadline) WHERE state = 'running' AND deadline IS NOT NULL;
-- At most one open job per unique key.
CREATE UNIQUE INDEX job_unique_key_idx ON job (unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('queued', 'running');
-- Concurrency policies look for open jobs of a task.
CREATE INDEX job_open_by_task_idx ON job (periodic_task_id) WHERE state IN ('queued', 'running');
-- Listing and search.
CREATE INDEX job_task_idx ON job (periodic_task_id, id) WHERE periodic_task_id IS NOT NULL;
CREATE INDEX job_state_idx ON job (state, id);
CREATE INDEX job_type_idx ON job (type, id);
-- Retention deletes final jobs by age.
CREATE INDEX job_finished_idx ON job (finished_at)
  WHERE state IN ('finished', 'failed', 'dropped', 'cancelled');

-- Wake long-polling workers of every instance when jobs are inserted, however they are inserted
-- (through the API or inside a caller's own transaction). One notification per statement.
CREATE FUNCTION jobclock_notify_job_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('jobclock_jobs', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_inserted_notify AFTER INSERT ON job
  FOR EACH STATEMENT EXECUTE FUNCTION jobclock_notify_job_inserted();
