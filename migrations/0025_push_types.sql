-- Push types: jobs of a type with a row here are leased by jobclock's own delivery engine and
-- POSTed to `url` (src/scheduler/push-sender.ts), through the same lease as pulling workers. A
-- PATCH /types/{type} {"push": null} deletes the row: the jobs stay queued for pulling workers.

CREATE TABLE push_type (
  type        text        PRIMARY KEY,
  url         text        NOT NULL CHECK (url ~* '^https?://'),
  -- as webhook.secret: 'aes-256-gcm:…' with JOBCLOCK_SECRET_KEY set, else 'plain:<secret>'
  secret      text        NOT NULL,
  -- how long the endpoint has to answer; the lease is this plus a margin
  timeout_ms  bigint      NOT NULL CHECK (timeout_ms BETWEEN 1 AND 900000),
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
