-- Webhooks: subscriptions, and an outbox of deliveries written in the transaction of the change
-- that causes each event, so that no event is lost when jobclock or a receiver crashes. The
-- delivery engine (src/scheduler/delivery-engine.ts) claims due rows with FOR UPDATE SKIP LOCKED.

CREATE TABLE webhook (
  id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url           text        NOT NULL CHECK (url ~* '^https?://'),
  events        text[]      NOT NULL CHECK (cardinality(events) > 0 AND events <@ ARRAY[
                  'job.finished', 'job.failed', 'job.dropped', 'job.cancelled',
                  'task.failing', 'task.overdue', 'task.recovered']),
  -- null: any
  filter_type   text,
  filter_group  text,
  filter_task   text,
  -- 'aes-256-gcm:<base64 iv|tag|ciphertext>' when JOBCLOCK_SECRET_KEY is set, else 'plain:<secret>':
  -- an HMAC needs the secret itself, so it cannot be stored as a hash (docs/webhooks.md)
  secret        text        NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);

CREATE TABLE webhook_delivery (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- no foreign key: its check would take a KEY SHARE lock on the webhook row for every delivery
  -- recorded, and the reports of concurrent workers, all locking the same few webhook rows, would
  -- create a MultiXact each. Deleting a webhook deletes its deliveries; one recorded concurrently
  -- is removed by the engine when it comes due.
  webhook_id       bigint      NOT NULL,
  event            text        NOT NULL,
  -- the job id or periodic task id the event is about
  subject          text        NOT NULL,
  -- when the event happened (a job's finished_at, a task's last failure or success, its overdue_at)
  at               timestamptz NOT NULL,
  -- task events: the task as it was. Job events carry none: the job is read when the delivery is
  -- sent (a snapshot of the row cost a report of 100 jobs more than twice its time with three
  -- subscriptions; the narrow row costs a fraction of that)
  payload          jsonb,
  status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer     NOT NULL DEFAULT 0,
  -- pending: when the next attempt is due (a claimed attempt moves it past its timeout, so that
  -- another instance takes it over only if this one died); null once delivered or failed
  next_attempt_at  timestamptz,
  last_status_code integer,
  last_error       text,
  created_at       timestamptz NOT NULL,
  delivered_at     timestamptz,
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
) WITH (autovacuum_vacuum_scale_factor = 0.05);

-- the engine's claim and its "when is the next one due": only pending rows
CREATE INDEX webhook_delivery_due_idx ON webhook_delivery (next_attempt_at) WHERE status = 'pending';
-- GET /webhooks/{id}/deliveries, newest first
CREATE INDEX webhook_delivery_webhook_idx ON webhook_delivery (webhook_id, id);
-- retention: deliveries no longer pending, by age
CREATE INDEX webhook_delivery_done_idx ON webhook_delivery (created_at) WHERE status <> 'pending';

-- task.overdue is announced once per overdue_at: the moment announced (the loop that announces
-- compares it with overdue_at; a run that finishes clears it)
ALTER TABLE periodic_task ADD COLUMN overdue_announced_at timestamptz;
CREATE INDEX periodic_task_overdue_unannounced_idx ON periodic_task (overdue_at)
  WHERE overdue_at IS NOT NULL AND overdue_announced_at IS DISTINCT FROM overdue_at;

-- Job events. A statement-level trigger sharing the transition table that job_search's trigger
-- (migrations 0013, 0017) already collects, so it adds no capture to any UPDATE of job; with no
-- webhook subscribed to a job event it costs one call and one look at the (small) webhook table
-- per statement. A job became final in this statement when its finished_at is its updated_at:
-- every statement that ends a job (a report, the lease reaper, the lease's drop check, a cancel,
-- the scheduler) sets both to its now, and statements that touch a final job (a report or
-- heartbeat after a cancel) move updated_at only.
CREATE FUNCTION jobclock_webhook_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook WHERE events && '{job.finished,job.failed,job.dropped,job.cancelled}'::text[]) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_delivery (webhook_id, event, subject, at, next_attempt_at, created_at)
    SELECT w.id, e.event, n.id::text, n.finished_at, n.finished_at, n.finished_at
      FROM jobclock_new n
     CROSS JOIN LATERAL (SELECT 'job.' || n.state AS event) e
      JOIN webhook w ON e.event = ANY (w.events)
                    AND (w.filter_type IS NULL OR w.filter_type = n.type)
                    AND (w.filter_group IS NULL OR w.filter_group = n.group_)
                    AND (w.filter_task IS NULL OR w.filter_task = n.periodic_task_id)
     WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled') AND n.finished_at = n.updated_at;
  GET DIAGNOSTICS k = ROW_COUNT;
  IF k > 0 THEN
    PERFORM pg_notify('jobclock_deliveries', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_webhook_events AFTER UPDATE ON job
  REFERENCING NEW TABLE AS jobclock_new
  FOR EACH STATEMENT EXECUTE FUNCTION jobclock_webhook_job_events();

-- The task of an event, as deliveries show it.
CREATE FUNCTION jobclock_webhook_task(t periodic_task, status text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', t.id, 'type', t.task, 'group', t.group_, 'enabled', t.enabled,
    'health', jsonb_build_object(
      'status', status,
      'consecutiveFailures', t.consecutive_failures,
      'lastSuccessAt', to_char(t.last_success_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'lastFailureAt', to_char(t.last_failure_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    'overdueAt', to_char(t.overdue_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

-- The deliveries of one task event, for every subscription that matches it.
CREATE FUNCTION jobclock_webhook_task_event(t periodic_task, ev text, ev_status text, ev_at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  INSERT INTO webhook_delivery (webhook_id, event, subject, at, payload, next_attempt_at, created_at)
    SELECT w.id, ev, t.id, ev_at, jobclock_webhook_task(t, ev_status), ev_at, ev_at
      FROM webhook w
     WHERE ev = ANY (w.events)
       AND (w.filter_type IS NULL OR w.filter_type = t.task)
       AND (w.filter_group IS NULL OR w.filter_group = t.group_)
       AND (w.filter_task IS NULL OR w.filter_task = t.id);
  GET DIAGNOSTICS k = ROW_COUNT;
  IF k > 0 THEN
    PERFORM pg_notify('jobclock_deliveries', '');
  END IF;
  RETURN k;
END;
$$;

-- task.failing (failures went from none to some) and task.recovered (a run finished after the task
-- was failing or announced overdue), where migration 0021's outcome trigger writes the health facts.
-- A row trigger whose WHEN lets through only updates of those facts.
CREATE FUNCTION jobclock_webhook_task_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  success boolean := NEW.consecutive_failures = 0
                     AND (OLD.consecutive_failures > 0 OR NEW.last_success_at IS DISTINCT FROM OLD.last_success_at);
  was_overdue boolean := OLD.overdue_announced_at IS NOT NULL AND OLD.overdue_announced_at = OLD.overdue_at;
BEGIN
  IF success THEN
    NEW.overdue_announced_at := NULL;
    IF OLD.consecutive_failures > 0 OR was_overdue THEN
      PERFORM jobclock_webhook_task_event(NEW, 'task.recovered', 'ok', coalesce(NEW.last_success_at, NEW.updated));
    END IF;
  ELSIF OLD.consecutive_failures = 0 AND NEW.consecutive_failures > 0 THEN
    PERFORM jobclock_webhook_task_event(NEW, 'task.failing', 'failing', coalesce(NEW.last_failure_at, NEW.updated));
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER periodic_task_webhook_events BEFORE UPDATE OF consecutive_failures, last_success_at ON periodic_task
  FOR EACH ROW
  WHEN (NEW.consecutive_failures IS DISTINCT FROM OLD.consecutive_failures
        OR NEW.last_success_at IS DISTINCT FROM OLD.last_success_at)
  EXECUTE FUNCTION jobclock_webhook_task_events();
