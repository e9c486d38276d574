/**
 * Webhook subscriptions, their outbox of events and their deliveries (migrations 0022, 0028). Job
 * and task events are written by triggers in the transaction that causes them; task.overdue, which
 * no write causes, by taskAnnounceOverdue. The delivery engine turns events into deliveries as it
 * claims them, sends and records through the rest.
 */
import { sql } from 'kysely';
const webhookFromRow = (r) => ({
    id: String(r.id),
    url: r.url,
    events: r.events,
    filter: { type: r.filter_type, group: r.filter_group, periodicTaskId: r.filter_task },
    secret: r.secret,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
});
const WEBHOOK_COLUMNS = sql `id::text AS id, url, events, filter_type, filter_group, filter_task, secret, created_at, updated_at`;
/** Webhook and delivery ids are bigint identities; anything else names none. */
export const isWebhookId = (id) => /^[1-9][0-9]{0,17}$/.test(id);
export async function webhookInsert(db, w, now) {
    const { rows } = await sql `
    INSERT INTO webhook (url, events, filter_type, filter_group, filter_task, secret, created_at, updated_at)
    VALUES (${w.url}, ${[...w.events]}::text[], ${w.filter.type}, ${w.filter.group}, ${w.filter.periodicTaskId}, ${w.secret},
            ${now}::timestamptz, ${now}::timestamptz)
    RETURNING ${WEBHOOK_COLUMNS}`.execute(db.kysely);
    return webhookFromRow(rows[0]);
}
/** Webhooks in id order after `after`. */
export async function webhookList(db, q) {
    const { rows } = await sql `
    SELECT ${WEBHOOK_COLUMNS} FROM webhook
    WHERE ${q.after === undefined ? sql `true` : sql `id > ${q.after}::bigint`}
    ORDER BY id LIMIT ${q.limit}`.execute(db.kysely);
    return rows.map(webhookFromRow);
}
export async function webhookGet(db, id) {
    if (!isWebhookId(id))
        return null;
    const { rows } = await sql `SELECT ${WEBHOOK_COLUMNS} FROM webhook WHERE id = ${id}::bigint`.execute(db.kysely);
    return rows[0] ? webhookFromRow(rows[0]) : null;
}
/** Changes the fields given (undefined: kept); null when there is no such webhook. */
export async function webhookUpdate(db, id, p, now) {
    if (!isWebhookId(id))
        return null;
    const keep = (v, col, cast = '') => (v === undefined ? sql.ref(col) : sql `${v}${sql.raw(cast)}`);
    const { rows } = await sql `
    UPDATE webhook SET
      url = ${keep(p.url, 'url')},
      events = ${keep(p.events === undefined ? undefined : [...p.events], 'events', '::text[]')},
      filter_type = ${keep(p.filter === undefined ? undefined : p.filter.type, 'filter_type')},
      filter_group = ${keep(p.filter === undefined ? undefined : p.filter.group, 'filter_group')},
      filter_task = ${keep(p.filter === undefined ? undefined : p.filter.periodicTaskId, 'filter_task')},
      secret = ${keep(p.secret, 'secret')},
      updated_at = ${now}::timestamptz
    WHERE id = ${id}::bigint
    RETURNING ${WEBHOOK_COLUMNS}`.execute(db.kysely);
    return rows[0] ? webhookFromRow(rows[0]) : null;
}
/** Deletes a webhook and its deliveries; false when there was none. */
export async function webhookDelete(db, id) {
    if (!isWebhookId(id))
        return false;
    const { rows } = await sql `
    WITH gone AS (DELETE FROM webhook WHERE id = ${id}::bigint RETURNING id),
    deliveries AS (DELETE FROM webhook_delivery WHERE webhook_id = ${id}::bigint AND EXISTS (SELECT 1 FROM gone))
    SELECT count(*)::int AS n FROM gone`.execute(db.kysely);
    return (rows[0]?.n ?? 0) > 0;
}
/**
 * A webhook's deliveries, newest first, before the delivery `before`; a claimed attempt's
 * nextAttemptAt is the end of its hold. Events not yet turned into deliveries are not among them:
 * call deliveryFanOut first.
 */
export async function deliveryList(db, webhookId, q) {
    const { rows } = await sql `
    SELECT id::text AS id, webhook_id::text AS webhook_id, event, status, attempts, last_status_code, last_error,
           greatest(next_attempt_at, held_until) AS next_attempt_at, created_at, delivered_at
    FROM webhook_delivery
    WHERE webhook_id = ${webhookId}::bigint
      AND ${q.before === undefined ? sql `true` : sql `id < ${q.before}::bigint`}
      AND ${q.status === undefined ? sql `true` : sql `status = ${q.status}`}
    ORDER BY id DESC LIMIT ${q.limit}`.execute(db.kysely);
    return rows.map((r) => ({
        id: r.id,
        webhookId: r.webhook_id,
        event: r.event,
        status: r.status,
        attempts: r.attempts,
        lastStatusCode: r.last_status_code,
        lastError: r.last_error,
        nextAttemptAt: r.next_attempt_at,
        createdAt: r.created_at,
        deliveredAt: r.delivered_at,
    }));
}
/**
 * Turns recorded events (migration 0028's webhook_event) into deliveries, one per subject and
 * subscription that matched when the event happened and still exists, oldest events first, in one
 * statement. `need`: at least that many deliveries if that many are waiting, skipping events
 * another instance is turning meanwhile (the engine's claim). Without: every event, waiting for
 * those another transaction holds (a listing, which must show them all). Returns how many
 * deliveries were made.
 */
export async function deliveryFanOut(db, need) {
    const pick = need === undefined
        ? sql `SELECT id, 0 AS n FROM webhook_event ORDER BY id FOR UPDATE`
        : sql `SELECT id, cardinality(subjects) * cardinality(webhook_ids) AS n FROM webhook_event
            ORDER BY id LIMIT ${need} FOR UPDATE SKIP LOCKED`;
    const { rows } = await sql `
    WITH picked AS (${pick}),
    chosen AS (
      SELECT id FROM (SELECT id, sum(n) OVER (ORDER BY id) - n AS before FROM picked) s
      WHERE ${need === undefined ? sql `true` : sql `before < ${need}`}
    ),
    gone AS (DELETE FROM webhook_event e USING chosen c WHERE e.id = c.id RETURNING e.*),
    made AS (
      INSERT INTO webhook_delivery (webhook_id, event, subject, at, payload, next_attempt_at, created_at)
      SELECT w.id, g.event, s.subject, g.at, g.payload, g.at, g.at
        FROM gone g
       CROSS JOIN LATERAL unnest(g.subjects) WITH ORDINALITY AS s(subject, i)
        JOIN webhook w ON w.id = ANY (g.webhook_ids)
       ORDER BY g.id, s.i, w.id
      RETURNING 1
    )
    -- the deliveries' ids are what receivers dedup by: a transaction that makes them commits
    -- durably even where the engine's claims do not (deliveryCommitLazily), so that a crash of the
    -- database cannot make an event's deliveries again under other ids after some were sent
    SELECT n, CASE WHEN n > 0 THEN set_config('synchronous_commit', 'on', true) END AS durable
      FROM (SELECT count(*)::int AS n FROM made) m`.execute(db.kysely);
    return rows[0]?.n ?? 0;
}
/**
 * Claims up to `limit` due deliveries for one attempt each, skipping rows another instance is
 * claiming: each counts the attempt and is held `holdMs` (past the request's timeout), so no other
 * instance sends it meanwhile, and one that died mid-attempt is retried then. The hold is a column
 * outside every index, so the claim's update can be HOT. When fewer deliveries than `limit` are
 * due, recorded events are turned into deliveries (deliveryFanOut) and those claimed too.
 */
export async function deliveryClaim(db, now, limit, holdMs) {
    const claimed = await claimDue(db, now, limit, holdMs);
    if (claimed.length < limit && (await deliveryFanOut(db, limit - claimed.length)) > 0) {
        claimed.push(...(await claimDue(db, now, limit - claimed.length, holdMs)));
    }
    return claimed;
}
async function claimDue(db, now, limit, holdMs) {
    const { rows } = await sql `
    WITH due AS (
      SELECT id, webhook_id FROM webhook_delivery
      WHERE status = 'pending' AND next_attempt_at <= ${now}::timestamptz
        AND (held_until IS NULL OR held_until <= ${now}::timestamptz)
      ORDER BY next_attempt_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    -- recorded for a webhook deleted meanwhile (there is no foreign key: migration 0022)
    orphans AS (
      DELETE FROM webhook_delivery x USING due
      WHERE x.id = due.id AND NOT EXISTS (SELECT 1 FROM webhook w WHERE w.id = due.webhook_id)
    )
    UPDATE webhook_delivery d
       SET attempts = d.attempts + 1, held_until = ${now}::timestamptz + ${holdMs} * interval '1 millisecond'
      FROM due, webhook w
     WHERE d.id = due.id AND w.id = d.webhook_id
    RETURNING d.id::text AS id, d.event, d.subject, d.at,
              CASE WHEN d.event LIKE 'job.%'
                   THEN (SELECT to_jsonb(j) - 'lease_token' FROM job j WHERE j.id = d.subject::bigint)
                   ELSE d.payload END AS payload,
              d.attempts, d.created_at, w.url, w.secret`.execute(db.kysely);
    return rows.map((r) => ({
        id: r.id,
        event: r.event,
        subject: r.subject,
        at: r.at,
        payload: r.payload,
        attempts: r.attempts,
        createdAt: r.created_at,
        url: r.url,
        secret: r.secret,
    }));
}
/**
 * Lets the current transaction commit without waiting for its WAL to be flushed (the engine's
 * claims and records: a crash loses at most the last moments of them, and those attempts are made
 * again). Only inside withTransaction.
 */
export async function deliveryCommitLazily(tx) {
    await sql `SET LOCAL synchronous_commit TO off`.execute(tx.kysely);
}
/**
 * Records attempts in one statement, each a compare-and-set on the attempt it claimed (a delivery
 * taken over by another instance after this one overran its hold is not overwritten). Returns how
 * many were recorded.
 */
export async function deliveryRecord(db, attempts, now) {
    if (attempts.length === 0)
        return 0;
    const input = JSON.stringify(attempts.map((a) => ({
        id: a.id,
        attempts: a.attempts,
        status: a.status,
        next_at: a.nextAttemptAt?.toISOString() ?? null,
        code: a.statusCode,
        error: a.error,
    })));
    const r = await sql `
    UPDATE webhook_delivery d SET
      status = i.status,
      next_attempt_at = i.next_at,
      held_until = NULL,
      last_status_code = i.code,
      last_error = i.error,
      delivered_at = CASE WHEN i.status = 'delivered' THEN ${now}::timestamptz END
    FROM jsonb_to_recordset(${input}::jsonb) AS i(id bigint, attempts int, status text, next_at timestamptz, code int, error text)
    WHERE d.id = i.id AND d.attempts = i.attempts AND d.status = 'pending'`.execute(db.kysely);
    return Number(r.numAffectedRows ?? 0);
}
/**
 * When the earliest pending delivery is due (null: none is pending): a recorded event is due when
 * it happened; a held delivery when its hold ends (looked for among the first thousand by
 * next_attempt_at, more than the attempts all instances hold at once).
 */
export async function deliveryNextDue(db) {
    const { rows } = await sql `
    SELECT least(
      (SELECT at FROM webhook_event ORDER BY id LIMIT 1),
      (SELECT min(greatest(next_attempt_at, held_until)) FROM (
         SELECT next_attempt_at, held_until FROM webhook_delivery WHERE status = 'pending'
         ORDER BY next_attempt_at LIMIT 1000) s)) AS at`.execute(db.kysely);
    return rows[0]?.at ?? null;
}
/** Deletes up to `limit` deliveries no longer pending that were created before `before`. Returns how many. */
export async function deliveryDeleteOld(db, before, limit) {
    const { rows } = await sql `
    WITH gone AS (
      DELETE FROM webhook_delivery WHERE id IN (
        SELECT id FROM webhook_delivery
        WHERE status <> 'pending' AND created_at < ${before}::timestamptz
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id
    )
    SELECT count(*)::int AS deleted FROM gone`.execute(db.kysely);
    return rows[0]?.deleted ?? 0;
}
/**
 * Announces task.overdue for up to `limit` enabled tasks whose overdue_at has passed at `now` and
 * was not announced yet: marks each announced and records a delivery for every matching
 * subscription, in one statement. An index holds only the tasks not yet announced, so a look at
 * a healthy system reads nothing. Returns the tasks announced.
 */
export async function taskAnnounceOverdue(db, now, limit) {
    const { rows } = await sql `
    WITH due AS (
      SELECT id FROM periodic_task
      WHERE overdue_at IS NOT NULL AND overdue_announced_at IS DISTINCT FROM overdue_at AND overdue_at <= ${now}::timestamptz
        AND enabled
      ORDER BY overdue_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    marked AS (
      UPDATE periodic_task t SET overdue_announced_at = t.overdue_at
      FROM due WHERE t.id = due.id
      RETURNING t.*
    )
    SELECT m.id, jobclock_webhook_task_event(m::periodic_task, 'task.overdue', 'overdue', m.overdue_at) AS recorded
    FROM marked m`.execute(db.kysely);
    return rows.map((r) => r.id);
}
//# sourceMappingURL=webhooks.js.map