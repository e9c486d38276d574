-- One outbox row per event and statement instead of one delivery row per event and subscription.
--
-- Migration 0022's job trigger wrote a webhook_delivery row for every finished job and every
-- subscription matching it: 300 rows, each with three index entries, in a report of 100 jobs with
-- three subscriptions, which cost the worker loop 15-30 % (bench/README.md, "Webhooks"). Events
-- are now recorded in webhook_event, in the same transaction as the change that causes them as
-- before: one row for the jobs of one statement that ended the same way at the same moment and
-- match the same subscriptions (a report of 100: one row). Which subscriptions match is decided
-- when the event happens, as before, and kept in the row (webhook_ids), so a subscription created
-- or changed later does not receive older events. The delivery engine turns events into
-- webhook_delivery rows (one per subject and subscription, each with its own attempts, status and
-- last answer, as before) when it claims them, in one statement per claim; listing a webhook's
-- deliveries does the same first for every event still waiting, so the listing shows what it
-- showed before.
--
-- Deliveries recorded before this migration are webhook_delivery rows already: they are sent as
-- they are, nothing needs moving.

CREATE TABLE webhook_event (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event        text        NOT NULL,
  -- the job ids (as text) or the one periodic task id the event is about
  subjects     text[]      NOT NULL CHECK (cardinality(subjects) > 0),
  -- the subscriptions matching it when it happened (no foreign key: see webhook_delivery; a
  -- subscription deleted meanwhile is skipped when the event is turned into deliveries)
  webhook_ids  bigint[]    NOT NULL CHECK (cardinality(webhook_ids) > 0),
  -- when it happened (the deliveries' at and created_at)
  at           timestamptz NOT NULL,
  -- task events: the task as it was (one subject). Job events: none, the job is read when sent
  payload      jsonb
) WITH (autovacuum_vacuum_scale_factor = 0.05);

-- A claim takes the attempt by moving held_until past the request's timeout instead of
-- next_attempt_at: a column outside every index, so the claim's update can be HOT (it rewrote
-- webhook_delivery_due_idx's column before). A delivery is due when next_attempt_at has passed
-- and it is not held.
ALTER TABLE webhook_delivery ADD COLUMN held_until timestamptz;
-- room on each page for the claim's HOT update of its rows
ALTER TABLE webhook_delivery SET (fillfactor = 80);

CREATE OR REPLACE FUNCTION jobclock_webhook_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook WHERE events && '{job.finished,job.failed,job.dropped,job.cancelled}'::text[]) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_event (event, subjects, webhook_ids, at)
    SELECT m.event, array_agg(m.id::text ORDER BY m.id), m.webhook_ids, m.finished_at
      FROM (SELECT n.id, n.finished_at, e.event, array_agg(w.id ORDER BY w.id) AS webhook_ids
              FROM jobclock_new n
             CROSS JOIN LATERAL (SELECT 'job.' || n.state AS event) e
              JOIN webhook w ON e.event = ANY (w.events)
                            AND (w.filter_type IS NULL OR w.filter_type = n.type)
                            AND (w.filter_group IS NULL OR w.filter_group = n.group_)
                            AND (w.filter_task IS NULL OR w.filter_task = n.periodic_task_id)
             WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled') AND n.finished_at = n.updated_at
             GROUP BY n.id, n.finished_at, e.event) m
     GROUP BY m.event, m.webhook_ids, m.finished_at;
  GET DIAGNOSTICS k = ROW_COUNT;
  IF k > 0 THEN
    PERFORM pg_notify('jobclock_deliveries', '');
  END IF;
  RETURN NULL;
END;
$$;

-- The event of one task, for the subscriptions that match it; returns how many do.
CREATE OR REPLACE FUNCTION jobclock_webhook_task_event(t periodic_task, ev text, ev_status text, ev_at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[];
BEGIN
  SELECT array_agg(w.id ORDER BY w.id) INTO ids
    FROM webhook w
   WHERE ev = ANY (w.events)
     AND (w.filter_type IS NULL OR w.filter_type = t.task)
     AND (w.filter_group IS NULL OR w.filter_group = t.group_)
     AND (w.filter_task IS NULL OR w.filter_task = t.id);
  IF ids IS NULL THEN
    RETURN 0;
  END IF;
  INSERT INTO webhook_event (event, subjects, webhook_ids, at, payload)
    VALUES (ev, ARRAY[t.id::text], ids, ev_at, jobclock_webhook_task(t, ev_status));
  PERFORM pg_notify('jobclock_deliveries', '');
  RETURN cardinality(ids);
END;
$$;
